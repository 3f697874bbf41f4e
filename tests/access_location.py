"""The orders code location with an access policy and a retention of 0 days: what the access tests load, in process
and through the CLI (``BACKFILL_MODULE=tests.access_location``)."""

from backfill_assets import AccessPolicy, CleanupPolicy
from backfill_assets.examples.orders.definitions import orders_definitions

APPROVER = "ana@example.com"
ADMIN = "olga"
STRANGER = "mallory"

defs = orders_definitions(access=AccessPolicy(approvers=[APPROVER], admins=[ADMIN]),
                          cleanup=CleanupPolicy(retention_days=0))
