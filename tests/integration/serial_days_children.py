"""A code location with an asset declared ``parallel_days=False``, and the child process that runs one of its days
(the forkserver preloads this module, ``tests/forkserver.py``): ``test_serial_days.py`` starts several at once, as
Dagster's own run queue starts a backfill's runs on a stock instance.

A child takes its environment as an argument and installs it before touching the product (the forkserver keeps
the environment it was started with)."""

from __future__ import annotations

import json
import os
import time
import warnings

import dagster as dg
import pandas as pd

from backfill_assets import BusinessCalendar, backfill_definitions, gated_asset, not_empty
from backfill_assets.integration.jobs import BACKFILL_JOB
from backfill_assets.integration.keys import asset_key

calendar = BusinessCalendar("Europe/Berlin", "2024-03-01")
COMPUTING_SECONDS = 0.5
ENV_SPANS = "SERIAL_DAYS_SPANS"  # where each computed day's span is appended (a JSON line)


@gated_asset(calendar=calendar, audits=[not_empty()], name="visits")
def visits(interval) -> pd.DataFrame:
    return pd.DataFrame({"visitor": ["a", "b"], "day": [interval.key] * 2})


@gated_asset(calendar=calendar, deps=[visits], audits=[not_empty()], name="sessions", parallel_days=False)
def sessions(interval, visits: pd.DataFrame) -> pd.DataFrame:
    started = time.time()
    time.sleep(COMPUTING_SECONDS)  # long enough for days computed at once to overlap
    with open(os.environ[ENV_SPANS], "a") as spans:
        spans.write(json.dumps([interval.key, started, time.time()]) + "\n")
    return visits.assign(sessions=1)


DEFS = backfill_definitions(assets=[visits, sessions])


def run_day(day: str, asset: str, tags: dict[str, str]) -> dg.ExecuteInProcessResult:
    with dg.DagsterInstance.get() as instance:
        return DEFS.resolve_job_def(BACKFILL_JOB).execute_in_process(
            partition_key=day, instance=instance, tags=tags, asset_selection=[asset_key(asset)],
            raise_on_error=False,
        )


def run_day_in_child(env: dict[str, str], day: str, tags: dict[str, str], results) -> None:
    """One run of ``sessions`` for ``day``: its id, success and step failure put on ``results``."""
    warnings.simplefilter("ignore")
    # The forkserver keeps the environment of the test that started it: what this test did not set goes.
    for stale in [k for k in os.environ if k.startswith(("DAGSTER_", "BACKFILL_")) and k not in env]:
        del os.environ[stale]
    os.environ.update(env)
    result = run_day(day, "sessions", tags)
    failure = next((e.step_failure_data.error.message for e in result.all_events if e.is_step_failure), None)
    results.put({"day": day, "run_id": result.run_id, "success": result.success, "failure": failure})
