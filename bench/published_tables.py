"""What the published tables cost: ``python -m bench.published_tables`` (and a part of ``make bench``).

The default request path B (``bench/contenders/ours.py``) over the same source, with the Iceberg tables on (the
default) and off (``BACKFILL_PUBLISHED_TABLES=none``, files only), ``--reps`` times each, interleaved (on, off, then
off, on, ...), each on a fresh home. Reported: the wall and CPU medians of each and their ratios (on / off: the cost
of the tables, measured in the same run), and from the tables themselves:

- **publish → visible latency**: for every publish-log row of a run with the tables on, the first snapshot of the
  asset's table whose ``backfill-assets.publish-seq`` reaches the row, its timestamp minus the row's ``at``;
- **commits and lost commits**: snapshots per table and their ``backfill-assets.lost-commits`` (commits a sync lost
  to another writer and planned again), and the days the tables hold against the pointers (none may be missing);
- the cross-check: ``daily_revenue``'s table, read with pyiceberg, against the catalog's published versions.

Example: python -m bench.published_tables --days 365 --reps 2
Example: python -m bench.published_tables --days 3 --orders-per-day 200 --reps 1
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import sqlalchemy as sa

from backfill_assets.engine.model.settings import ENV_PUBLISHED_TABLES, Settings, TableSettings
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.pointer_log import POINTER_MOVES, current_pointers
from backfill_assets.engine.store.schema import publish_log
from backfill_assets.engine.tables.iceberg_table import LOST_COMMITS_PROPERTY, SEQ_PROPERTY, IcebergTables
from backfill_assets.examples.orders.domain import DAILY_REVENUE

from .checks import _totals
from .contenders import ours
from .contenders.ours import Created, OursStack
from .machine import describe_machine
from .micro.stats import latency
from .plain import ASSETS
from .published_tables_report import DAYS, KEY, REPS, WALL_TARGET
from .repetitions import interleaved, median
from .workspace import REPO, Sizes, Workspace

RESULTS = REPO / "bench" / "results"
MODES = {"on": {}, "off": {ENV_PUBLISHED_TABLES: "none"}}


def table_facts(stack: OursStack, created: Created) -> dict:
    """Per gated asset: snapshots, lost commits, days held vs pointers; the publish → visible latencies (seconds);
    and the cross-check of daily_revenue read from its table."""
    settings = Settings.from_env(stack.env)
    catalog = Catalog(settings.catalog_url)
    tables = IcebergTables(TableSettings.from_env(settings, stack.env))
    per_asset, latencies = {}, []
    for asset in ASSETS:
        table = tables.load(asset)
        snapshots = sorted(table.snapshots(), key=lambda s: s.timestamp_ms) if table is not None else []
        seqs = [(_prop(s, SEQ_PROPERTY), s.timestamp_ms / 1000) for s in snapshots]
        for seq, at in _publishes(catalog, asset):
            visible = next((ts for s, ts in seqs if s >= seq), None)
            if visible is not None:
                latencies.append(max(0.0, visible - at))
        _, pointers = current_pointers(catalog, asset)
        held = table.scan(selected_fields=("partition_date",)).to_arrow() if table is not None else None
        days_held = len(set(held.column("partition_date").to_pylist())) if held is not None else 0
        per_asset[asset] = {
            "snapshots": len(snapshots), "lost_commits": sum(_prop(s, LOST_COMMITS_PROPERTY) for s in snapshots),
            "days_published": len(pointers), "days_in_table": days_held,
        }
    return {"tables": per_asset, "latency_s": latencies, "table_check": _table_revenue(tables)}


def _prop(snapshot, name: str) -> int:
    raw = snapshot.summary[name] if snapshot.summary is not None else None
    return int(raw) if raw is not None and str(raw).isdigit() else 0


def _publishes(catalog: Catalog, asset: str) -> list[tuple[int, float]]:
    with catalog.engine.connect() as conn:
        rows = conn.execute(sa.select(publish_log.c.seq, publish_log.c.at)
                            .where(publish_log.c.asset == asset, publish_log.c.action.in_(POINTER_MOVES))).all()
    return [(int(r.seq), _epoch(r.at)) for r in rows]


def _epoch(at: str) -> float:
    """A log row's ``at`` (UTC ISO-8601 with its offset, as the catalog stores times) in epoch seconds."""
    parsed = datetime.fromisoformat(at)
    return (parsed if parsed.tzinfo else parsed.replace(tzinfo=timezone.utc)).timestamp()


def _table_revenue(tables: IcebergTables) -> dict:
    """daily_revenue's days, orders and revenue as a reader of the table sees them (pyiceberg, pandas)."""
    table = tables.load(DAILY_REVENUE)
    frame = table.scan().to_pandas() if table is not None else None
    if frame is None or frame.empty:
        return _totals([], 0)
    days = [group for _, group in frame.groupby("partition_date")]
    return _totals(days, len(days))


def run_mode(ws: Workspace, sizes: Sizes, mode: str, rep: int, timeout: float) -> dict:
    part = ws.part(f"tables-{mode}-{rep}")
    try:
        after = table_facts if mode == "on" else None
        outcome = ours.run(part, sizes, "B", timeout, extra_env=MODES[mode], after=after).as_dict()
    finally:
        part.close()
    outcome["mode"] = mode
    return outcome


def summarize(runs: list[dict], sizes: Sizes) -> dict:
    """The medians of each mode, the on/off ratios, the latency percentiles and commit counts over every run on."""
    by_mode = {m: [r for r in runs if r["mode"] == m] for m in MODES}
    figures = {m: {k: median([r[k] for r in rs]) for k in ("wall_s", "cpu_s", "peak_rss_mb")}
               for m, rs in by_mode.items()}
    for m, rs in by_mode.items():
        figures[m]["wall_s_each"] = [r["wall_s"] for r in rs]
        figures[m]["cpu_s_each"] = [r["cpu_s"] for r in rs]
        figures[m]["status"] = sorted({r["details"]["status"] for r in rs})
    on = [r["details"] for r in by_mode["on"]]
    tables = [t for d in on for t in d["tables"].values()]
    checks = [r["check"] for r in runs] + [d["table_check"] for d in on]
    return {
        "sizes": sizes.as_dict(), "reps": len(by_mode["on"]), "modes": figures,
        "wall_ratio": _ratio(figures["on"]["wall_s"], figures["off"]["wall_s"]),
        "cpu_ratio": _ratio(figures["on"]["cpu_s"], figures["off"]["cpu_s"]),
        "wall_target": WALL_TARGET,
        "latency": latency([s for d in on for s in d["latency_s"]]),
        "snapshots_per_run": median([sum(t["snapshots"] for t in d["tables"].values()) for d in on]),
        "publishes_per_run": median([sum(t["days_published"] for t in d["tables"].values()) for d in on]),
        "lost_commits": sum(t["lost_commits"] for t in tables),
        "days_missing": sum(t["days_published"] - t["days_in_table"] for t in tables),
        "check": checks[0] if checks else None,
        "checks_agree": len({json.dumps(c, sort_keys=True) for c in checks}) == 1,
        "runs": [{k: v for k, v in r.items() if k != "details"} | {"details": _slim(r["details"])} for r in runs],
    }


def _slim(details: dict) -> dict:
    """A run's details without the raw latency samples (kept as percentiles in the summary)."""
    return {k: v for k, v in details.items() if k not in ("latency_s", "breakdown", "sensor_ticks")}


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 3) if a and b else None


def measure(ws: Workspace, sizes: Sizes, reps: int, timeout: float, seed: bool = True) -> dict:
    """The whole measurement on ``ws`` (seeded here unless the caller already seeded it for ``sizes``)."""
    started = time.monotonic()
    seeded = ws.seed(sizes) if seed else None
    runs = [run_mode(ws, sizes, mode, rep, timeout) for rep, mode in interleaved(list(MODES), reps)]
    return {**summarize(runs, sizes), "seeded": seeded, "seconds": round(time.monotonic() - started, 1)}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.published_tables", description=__doc__.splitlines()[0])
    p.add_argument("--days", type=int, default=DAYS)
    p.add_argument("--orders-per-day", type=int, default=Sizes.orders_per_day)
    p.add_argument("--max-active", type=int, default=Sizes.max_active)
    p.add_argument("--reps", type=int, default=REPS, help="runs of each mode, interleaved")
    p.add_argument("--timeout", type=float, default=3600.0, help="seconds one run may take")
    p.add_argument("--out", type=Path, default=None, help="results file (default bench/results/<stamp>-...json)")
    p.add_argument("--keep", action="store_true", help="keep the temporary folder")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    sizes = Sizes(days=args.days, orders_per_day=args.orders_per_day, max_active=args.max_active)
    ws = Workspace(keep=args.keep)
    try:
        result = measure(ws, sizes, args.reps, args.timeout)
    finally:
        ws.close()
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    command = "python -m bench.published_tables " + " ".join(argv if argv is not None else sys.argv[1:])
    out = args.out or RESULTS / f"{stamp}-{KEY}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"stamp": stamp, "command": command.strip(), "machine": describe_machine(),
                               KEY: result}, indent=2, default=str))
    print(f"on/off wall {result['wall_ratio']} cpu {result['cpu_ratio']}; latency {result['latency']}; "
          f"lost commits {result['lost_commits']}; days missing {result['days_missing']}; "
          f"checks agree {result['checks_agree']} -> {out}")
    return 0 if result["checks_agree"] and result["days_missing"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
