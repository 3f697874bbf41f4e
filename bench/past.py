"""Depends-on-past: ``customer_snapshot`` (each day reads its own previous day) over consecutive days, on ours and
beside naive Dagster (N). Two measurements:

- **UI backfill**: GraphQL ``launchPartitionBackfill`` of customer_snapshot over the first ``ui_days`` days, as the
  Dagster UI's dialog sends it. Ours: the product's dagster.yaml and ``backfill-assets-daemon`` (Dagster's backfill
  daemon creates the runs, our run coordinator releases them in day order, the adoption sensor keeps the ledger).
  N: stock ``dagster-daemon`` and Dagster's coordinator, the naive location's self-dependent customer_snapshot
  (Dagster's backfill runs one day per iteration of its loop). Wall: from the launch to the backfill done.
- **chain** (ours): ``backfill-assets request create --assets customer_snapshot`` over the next ``chain_days`` days,
  the default path (no ``--partitions-per-run``). Its cost per day beyond the step: ``bench/past_facts.py``.

Prepared first, not measured: ours publishes raw_orders, order_facts and daily_revenue of every day with one
request; N's upstream files are written by the floor loop, as N writes them.
"""

from __future__ import annotations

import time
from typing import Callable

from backfill_assets.engine.model import tags as T
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT

from .checks import revenue_from_catalog, snapshot_from_catalog, snapshot_from_files
from .contenders import floor, naive
from .contenders.ours import OursStack, create_request, first_run_figures, ours_stack, request_argv
from .daemons import daemon_argv
from .dagster_facts import first_start, last_end, run_breakdown, runs_tagged
from .dagster_home import dagster_env, instance_classes, make_home
from .measure import ProcessSampler
from .orders import MODULE as ORDERS_MODULE
from .past_facts import chain_summary, day_steps
from .past_plan import PastPlan
from .plain import ASSETS
from .workspace import Workspace


def measure_ui(stack: naive.WebStack, keys: list[str], timeout: float) -> dict:
    """Launch customer_snapshot over ``keys`` as the UI does and wait for the backfill to be done."""
    with ProcessSampler([p.pid for p in stack.services]) as sampler:
        invoked = time.time()
        backfill_id = naive.launch(stack.url, keys, [CUSTOMER_SNAPSHOT], "bench depends-on-past")
        final = stack.wait_backfill(backfill_id, timeout, "depends-on-past UI backfill")
    records = runs_tagged(stack.instance, naive.BACKFILL_TAG, backfill_id)
    usage = sampler.usage
    return {
        "backfill_id": backfill_id,
        "status": final,
        "days": len(keys),
        "wall_s": round(usage.wall_s, 2),
        "cpu_s": round(usage.cpu_s, 2),
        "per_day_s": round(usage.wall_s / len(keys), 2),
        "runs": len(records),
        "first_run_start_s": first_start(records, invoked),
        "last_run_end_s": last_end(records, invoked),
        "chain": chain_summary(day_steps(stack.instance, records, CUSTOMER_SNAPSHOT)),
        "daemon_command": stack.daemon_command,
        **instance_classes(stack.instance),
    }


def _prepare_ours(stack: OursStack, plan: PastPlan, timeout: float) -> dict:
    """Publish every day's raw_orders, order_facts and daily_revenue (one request, the default path)."""
    keys = plan.keys
    created = create_request(stack.env, request_argv(ASSETS, keys[0], keys[-1], "--reprocess", "completed"))
    stack.wait_closed(created.request_id, timeout)
    return {"request_id": created.request_id, "status": stack.ledger.get(created.request_id).status,
            "seconds": round(time.time() - created.invoked, 1)}


def _chain(stack: OursStack, plan: PastPlan, timeout: float) -> dict:
    keys = plan.chain_keys
    with ProcessSampler([stack.daemon.pid]) as sampler:
        created = create_request(stack.env, request_argv([CUSTOMER_SNAPSHOT], keys[0], keys[-1]), sampler)
        stack.wait_closed(created.request_id, timeout)
    record = stack.ledger.get(created.request_id)
    records = runs_tagged(stack.instance, T.REQUEST_ID, created.request_id)
    return {
        "request_id": created.request_id,
        "status": record.status,
        "days": len(keys),
        "partitions_per_run": record.spec.partitions_per_run,
        "wall_s": round(sampler.usage.wall_s, 2),
        "cpu_s": round(sampler.usage.cpu_s, 2),
        "runs": len(records),
        **first_run_figures(records, created),
        "chain": chain_summary(day_steps(stack.instance, records, CUSTOMER_SNAPSHOT)),
        "breakdown": run_breakdown(stack.instance, records, 1),
        "check": snapshot_from_catalog(stack.catalog_url, keys[-1]),
        "daemon_command": stack.daemon_command,
    }


def run_ours(ws: Workspace, plan: PastPlan, max_active: int, timeout: float) -> dict:
    base = ws.dir("past-ours")
    with ours_stack(base, ws.source_url, max_active) as stack:
        prepared = _prepare_ours(stack, plan, timeout)
        with naive.webserver(ORDERS_MODULE, stack.env, base / "logs") as (url, web):
            view = naive.WebStack(url, stack.instance, [web, stack.daemon], stack.daemon_command)
            ui = measure_ui(view, plan.ui_keys, timeout)
        adopted = f"dg-{ui['backfill_id']}"
        stack.wait_closed(adopted, timeout)  # the chain's first day reads the UI backfill's last
        ui["adopted_request_status"] = stack.ledger.get(adopted).status
        ui["check"] = snapshot_from_catalog(stack.catalog_url, plan.ui_keys[-1])
        chain = _chain(stack, plan, timeout)
        orders = revenue_from_catalog(stack.catalog_url, plan.keys)["orders"]
    return {"prepare": prepared, "ui": ui, "chain": chain, "orders_all_days": orders}


def run_naive(ws: Workspace, plan: PastPlan, max_active: int, timeout: float) -> dict:
    base = ws.dir("past-naive")
    home = make_home(base / "home", max_active, stock=True)
    out = base / "out"
    floor.loop(out, ws.source_url, plan.ui_keys[0], plan.ui_keys[-1])  # the upstream days, as N writes them
    env = dagster_env(home, ws.source_url, BENCH_OUT_DIR=str(out))
    with naive.web_stack(naive.MODULE, env, home, base / "logs", daemon_argv(naive.MODULE, stock=True)) as stack:
        ui = measure_ui(stack, plan.ui_keys, timeout)
    ui["check"] = snapshot_from_files(out, plan.ui_keys[-1])
    return {"ui": ui}


def run(ws: Workspace, plan: PastPlan, max_active: int, timeout: float, which: tuple[str, ...],
        log: Callable[[str], None] = print) -> dict:
    """``which``: ``ours`` and/or ``naive``; the results of each, and whether their snapshots agree."""
    out: dict = {"ui_days": plan.ui_days, "chain_days": plan.chain_days, "ui_keys": [plan.ui_keys[0],
                 plan.ui_keys[-1]], "chain_keys": [plan.chain_keys[0], plan.chain_keys[-1]]}
    if "ours" in which:
        out["ours"] = run_ours(ws, plan, max_active, timeout)
        ui, chain = out["ours"]["ui"], out["ours"]["chain"]
        log(f"  depends-on-past, ours: UI backfill {ui['per_day_s']} s/day ({ui['status']}); chain "
            f"{chain['chain']['beyond_step'].get('median_s')} s/day beyond the step ({chain['status']})")
    if "naive" in which:
        out["naive"] = run_naive(ws, plan, max_active, timeout)
        log(f"  depends-on-past, N: UI backfill {out['naive']['ui']['per_day_s']} s/day "
            f"({out['naive']['ui']['status']})")
    out["checks"] = past_checks(out)
    return out


def past_checks(out: dict) -> dict:
    """The chain's last snapshot counts every order of every day so far; ours' and N's UI snapshots agree."""
    checks = {}
    if "ours" in out:
        ours = out["ours"]
        checks["chain_counts_every_order"] = ours["chain"]["check"]["lifetime_orders"] == ours["orders_all_days"]
    if "ours" in out and "naive" in out:
        checks["ui_snapshots_agree"] = out["ours"]["ui"]["check"] == out["naive"]["ui"]["check"]
    return checks
