"""What a depends-on-past chain run one day per run costs per day beyond its steps: seconds from one day's run
ending (SUCCESS) to the next day's run starting, under Dagster's own ``dagster-daemon run`` and under
``backfill-assets-daemon run``, both on the shipped ``dagster.yaml`` (the orders location).

Prepared first, not measured: one request publishes ``raw_orders`` and ``order_facts`` of every day (the default
path). Then ``request create --assets customer_snapshot --partitions-per-run 1`` over the same days: each day its
own run, each run created only once its previous day has published (the chain's strict order). Per day after the
first: ``gap_s`` (the run's start minus its predecessor's end, both as Dagster records them; of it,
``created_after_end_s`` until the run was created, the rest its queue and launch) and ``beyond_step_s``
(``bench/past_facts.py``: the time between two days' publishes that is not the later day's step). ``by_sensor``
counts the chain's runs a sensor tick created (they carry ``dagster/tick``), ``by_run_end`` those the previous
run's own end queued (``backfill/queued_by`` names the run).

``python -m bench.micro.chain_gap [DAYS]`` runs it alone (default 6 days).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys

import dagster as dg

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, ORDER_FACTS, RAW_ORDERS

from ..contenders.ours import request_argv
from ..daemons import command_text
from ..past_facts import beyond_step, day_steps
from ..services import wait_until
from ..workspace import REPO
from .first_run import _following, daemon_on_shipped_home

DAYS = 6
VARIANTS = ("stock", "product")
DONE_TIMEOUT_S = 600.0
TICK_TAG = "dagster/tick"


def _create(env: dict[str, str], argv: list[str]) -> str:
    done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise RuntimeError(f"request create failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    return json.loads(done.stdout)["request_id"]


def _wait_closed(ledger: Ledger, request_id: str, daemon: subprocess.Popen) -> str:
    wait_until(lambda: ledger.get(request_id).status in M.CLOSED_STATUSES, f"request {request_id}",
               DONE_TIMEOUT_S, [daemon], 0.5)
    return ledger.get(request_id).status


def _figures(instance: dg.DagsterInstance, request_id: str) -> dict:
    records = sorted(instance.get_run_records(dg.RunsFilter(tags={T.REQUEST_ID: request_id})),
                     key=lambda r: r.start_time or 0.0)
    gaps = [b.start_time - a.end_time for a, b in zip(records, records[1:], strict=False)
            if a.end_time and b.start_time]
    # Of the gap: until the next run exists (the tick), and from then to its start (the queue, the launch).
    created = [b.create_timestamp.timestamp() - a.end_time for a, b in zip(records, records[1:], strict=False)
               if a.end_time and b.start_time]
    beyond = beyond_step(day_steps(instance, records, CUSTOMER_SNAPSHOT))
    tags = [r.dagster_run.tags for r in records]
    return {
        "runs": len(records),
        "gap_s": _stats(gaps),
        "created_after_end_s": _stats(created),
        "beyond_step_s": _stats(beyond),
        "by_sensor": sum(TICK_TAG in t for t in tags),
        "by_run_end": sum(T.QUEUED_BY in t for t in tags),
        "statuses": sorted({r.dagster_run.status.value for r in records}),
    }


def _stats(values: list[float]) -> dict:
    if not values:
        return {"n": 0}
    return {"n": len(values), "median": round(statistics.median(values), 3),
            "range": [round(min(values), 3), round(max(values), 3)], "each": [round(v, 3) for v in values]}


def _variant(variant: str, days: int) -> dict:
    keys = _following(days)
    with daemon_on_shipped_home(variant, keys, "bench-chain-gap-") as running:
        env, daemon = running.env, running.daemon
        ledger = Ledger(Catalog(f"sqlite:///{running.home / 'catalog.db'}"))
        upstream = _create(env, [*request_argv([RAW_ORDERS, ORDER_FACTS], keys[0], keys[-1]),
                                 "--reprocess", "completed"])
        _wait_closed(ledger, upstream, daemon)
        chain = _create(env, [*request_argv([CUSTOMER_SNAPSHOT], keys[0], keys[-1]),
                              "--partitions-per-run", "1", "--reprocess", "completed"])
        status = _wait_closed(ledger, chain, daemon)
        return {"daemon": command_text(running.argv), "status": status, **_figures(running.instance, chain)}


def run(days: int = DAYS) -> dict:
    result: dict = {"days": days, "command": f"python -m bench.micro.chain_gap {days}"}
    for variant in VARIANTS:
        result[variant] = _variant(variant, days)
    medians = {v: result[v]["gap_s"].get("median") for v in VARIANTS}
    if medians["stock"] is not None and medians["product"]:
        result["stock_to_product"] = round(medians["stock"] / medians["product"], 2)
    return result


if __name__ == "__main__":
    print(json.dumps(run(*(int(a) for a in sys.argv[1:2])), indent=2))
