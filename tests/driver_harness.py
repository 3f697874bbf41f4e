"""Drive a request with the real driver logic, executing its submissions in-process (no daemon).

The sensor in dagster-daemon does exactly this loop; tests/e2e proves the daemon path. Here it is
deterministic and fast: each tick's run requests run to completion before the next tick.
"""

from __future__ import annotations

from backfill_assets import graph_of
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.integration.runs.local_runs import run_chunk, run_partitions
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.driver import drive_request, run_config_for, run_tags_for
from backfill_assets.integration.sensors.propagation import propagate_once
from tests.orders import DEFS


def execute_submission(env, record, submission, defs=DEFS):
    graph = graph_of(defs)
    tags = {**run_tags_for(record), RUN_KEY_TAG: submission.run_key}
    if submission.batched:
        return run_chunk(env.instance, submission.days_by_asset(graph), tags=tags,
                         configs=submission.configs, defs=defs)
    [run] = run_partitions(
        env.instance,
        [submission.partition],
        defs=defs,
        assets=list(submission.assets),
        tags=tags,
        run_config_for={submission.partition: run_config_for(graph, submission)},
    )
    return run


def drive(
    env,
    request_id: str,
    max_ticks: int = 60,
    propagate: bool = True,
    stop_after_ticks: int | None = None,
    defs=DEFS,
):
    """Tick until the request closes (or blocks); returns the list of (partition, assets) submitted in order.
    ``defs``: the code location whose graph the driver works on (the orders example unless told)."""
    graph = graph_of(defs)
    ledger = Ledger(env.catalog)
    submitted = []
    for tick in range(max_ticks):
        record = ledger.get(request_id)
        stopped = stop_after_ticks is not None and tick >= stop_after_ticks
        if record.status in (*M.CLOSED_STATUSES, M.BLOCKED) or stopped:
            break
        for submission in drive_request(graph, env.instance, env.catalog, record, code_version()):
            if submission.run_key in {s[2] for s in submitted}:
                continue  # a re-request of a run key that already ran: Dagster would skip it too
            execute_submission(env, record, submission, defs)
            submitted.append((submission.partition, submission.assets, submission.run_key))
        if propagate:
            propagate_once(graph, env.catalog)
    return submitted
