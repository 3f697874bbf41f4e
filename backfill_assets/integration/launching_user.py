"""Who launched a Dagster run, as far as Dagster says: recorded beside the names a person states (``approved_by``,
``by``), never instead of them.

Dagster OSS has no login: its webserver tags a run launched from the UI with ``dagster/from_ui=true`` and nothing
about who (measured on 1.13: ``get_reporting_user_tags`` is empty in OSS); ``dagster job launch`` tags nothing.
Dagster+ tags what its users launch with ``user`` (their email); a deployment behind an authenticating proxy may
add ``dagster/user`` itself. Without any of them the user is recorded as not known, and says how it was launched.
"""

from __future__ import annotations

from collections.abc import Mapping

DAGSTER_PLUS_USER_TAG = "user"
DAGSTER_USER_TAG = "dagster/user"
FROM_UI_TAG = "dagster/from_ui"
UI_WITHOUT_LOGIN = "dagster-ui (no login)"
NOT_RECORDED = "not recorded"


def launching_user(tags: Mapping[str, str]) -> str:
    """The user Dagster recorded for a run or backfill, or how it was launched when Dagster recorded none."""
    user = (tags.get(DAGSTER_PLUS_USER_TAG) or tags.get(DAGSTER_USER_TAG) or "").strip()
    if user:
        return user[:120]
    return UI_WITHOUT_LOGIN if tags.get(FROM_UI_TAG) == "true" else NOT_RECORDED
