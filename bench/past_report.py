"""The depends-on-past sections of docs/BENCHMARKS.md (``bench/past.py``): its target rows, its table, and where a
chain's time goes between two days."""

from __future__ import annotations

from .past_plan import KEY
from .tables import table, verdict

HAND_OFF = "past days hand off at once"  # the targets table's group: a day starts when its predecessor is done
CHAIN_LIMIT_S = 1.0  # a chain's cost per day beyond the step itself
UI_PER_DAY_LIMIT_S = 5.0  # a depends-on-past backfill launched from the Dagster UI, wall / days (ours)


def _beyond(m: dict) -> float | None:
    return (m.get("chain") or {}).get("beyond_step", {}).get("median_s")


def past_target_rows(results: dict) -> list[list]:
    past = results.get(KEY) or {}
    ours, naive_ui = past.get("ours") or {}, (past.get("naive") or {}).get("ui") or {}
    chain, ui = ours.get("chain") or {}, ours.get("ui") or {}
    beside_chain = f"N {_beyond(naive_ui)} s (UI backfill)" if naive_ui else ""
    beside_ui = f"N {naive_ui['per_day_s']} s/day" if naive_ui else ""
    missing = "not measured" if past else "not measured (`--no-past`)"
    return [
        [f"chain: cost per day beyond the step, median s (ours, customer_snapshot, {chain.get('days', '-')} d, "
         "`request create`)", HAND_OFF, beside_chain, _beyond(chain), f"≤ {CHAIN_LIMIT_S:g}",
         verdict(_beyond(chain), CHAIN_LIMIT_S) if chain else missing],
        [f"UI depends-on-past backfill s/day (ours, {ui.get('days', '-')} d, `launchPartitionBackfill`)", HAND_OFF,
         beside_ui, ui.get("per_day_s"), f"≤ {UI_PER_DAY_LIMIT_S:g}",
         verdict(ui.get("per_day_s"), UI_PER_DAY_LIMIT_S) if ui else missing],
    ]


def _cells(m: dict, check: dict | None) -> list:
    """One measurement's cells after its label."""
    c = m.get("chain") or {}
    beyond, step = c.get("beyond_step") or {}, c.get("step") or {}
    spread = f" ({beyond['min_s']}–{beyond['max_s']})" if beyond.get("n") else ""
    snap = (f"{check['customers']:,} customers, {check['lifetime_orders']:,} orders as of {check['as_of']}"
            if check else "")
    return [f"`{m.get('daemon_command', '')}`", m.get("days"), m.get("wall_s"),
            m.get("per_day_s", round(m["wall_s"] / m["days"], 2) if m.get("days") else None),
            step.get("median_s"), f"**{beyond.get('median_s')}**{spread}", m.get("first_run_start_s"),
            m.get("runs"), m.get("status"), snap]


def past_section(past: dict) -> list[str]:
    ours, naive_ui = past.get("ours") or {}, (past.get("naive") or {}).get("ui")
    rows = []
    if ours:
        rows.append(["**ours**, UI backfill", *_cells(ours["ui"], ours["ui"].get("check"))])
    if naive_ui:
        rows.append(["**N**, UI backfill", *_cells(naive_ui, naive_ui.get("check"))])
    if ours:
        chain = ours["chain"]
        rows.append([f"**ours**, chain (`request create`, K={chain.get('partitions_per_run')})",
                     *_cells(chain, chain.get("check"))])
    checks = past.get("checks") or {}
    lines = [
        f"`customer_snapshot` reads its own previous day, so its days run one after another. UI backfill: GraphQL "
        f"`launchPartitionBackfill` of customer_snapshot over {past['ui_days']} days ({past['ui_keys'][0]}.."
        f"{past['ui_keys'][1]}), as the Dagster UI's dialog sends it, wall from the launch to the backfill done. "
        f"Chain: `backfill-assets request create --assets customer_snapshot` over the next {past['chain_days']} "
        f"days ({past['chain_keys'][0]}..{past['chain_keys'][1]}), the default path, wall from the command to "
        "the request closed. Upstream days prepared first, not measured (ours: one request publishing raw_orders, "
        "order_facts and daily_revenue; N: the floor loop's files). \"Beyond the step\": per day after the first, "
        "the time between its predecessor's STEP_SUCCESS and its own, minus its own step (STEP_START → "
        "STEP_SUCCESS), from Dagster's event log: the hand-off from one day to the next. First run: from the "
        "launch / from `request create` returning to the first RUN_START.", "",
        *table(["measurement", "daemon", "days", "wall s", "s/day", "step median s",
                "beyond the step, median s (min–max)", "first run started after s", "runs", "status",
                "customer_snapshot at its last day"], rows),
        "",
        "Cross-checks: ours' and N's UI snapshots agree: **" + str(checks.get("ui_snapshots_agree")) + "**; the "
        "chain's last snapshot counts every order of every day so far (daily_revenue's orders): **"
        + str(checks.get("chain_counts_every_order")) + "**.",
    ]
    return lines


def chain_breakdown(past: dict) -> list[str]:
    """Where the chain's time goes, per run (one day per run), from the event log: the where-the-time-goes part."""
    breakdown = ((past.get("ours") or {}).get("chain") or {}).get("breakdown")
    if not breakdown:
        return []
    rows = [[phase, f"{s['median_s']} / {s['total_s']} (n={s['n']})" if s.get("n") else "-"]
            for phase, s in list(breakdown.items())[1:]]
    return ["Per-run phases of the depends-on-past chain (ours, one day per run; \"driver reaction\" is one day's "
            "publish, its run's end, to the next day's run created; median s / total s):", "",
            *table(["phase", "chain"], rows)]
