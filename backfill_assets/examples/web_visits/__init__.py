"""The web-visits example: America/New_York business days (23- and 25-hour DST days), two sources whose data
changes after the fact (late events), an asset with two upstreams and user-written audits.

page_views, signups (sources) → visits → conversions (reads visits and signups); page_views → hourly_traffic.
Its code location is ``backfill_assets.examples.web_visits.definitions``.
"""

MODULE = "backfill_assets.examples.web_visits.definitions"
