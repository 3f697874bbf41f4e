"""Backfill requests as data: the validated spec a user asks for, statuses, cell decisions (docs/DESIGN.md §7)."""

from __future__ import annotations

import json
import math
import secrets
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from backfill_assets.engine.model.errors import InvalidInput, PlanError
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.identity import validate_person_name, validate_text
from backfill_assets.engine.model.intervals import parse_day
from backfill_assets.engine.model.run_conf import validate_asset_sections
from backfill_assets.engine.wap.defects import validate_defect


class ReprocessPolicy(StrEnum):
    """Which cells a request re-runs (Airflow's backfill ``--reprocess-behavior``)."""

    NONE = "none"  # only intervals with no run at all
    FAILED = "failed"  # also those whose latest attempt failed, was rejected or died mid-write
    COMPLETED = "completed"  # every interval


class DownstreamPolicy(StrEnum):
    """What a request's publishes set in motion downstream."""

    NONE = "none"
    CASCADE = "cascade"
    HANDOFF = "handoff"


class Order(StrEnum):
    FORWARD = "forward"
    BACKWARD = "backward"


class RequestStatus(StrEnum):
    WAITING = "waiting"  # for another request's claim on overlapping partitions
    OPEN = "open"
    BLOCKED = "blocked"
    COMPLETED = "completed"
    CANCELLED = "cancelled"
    # Submits nothing new until `request resume` (which restores the status it had); keeps its claims, settles
    # the runs already in flight, and never closes while paused (engine/store/pauses.py).
    PAUSED = "paused"


class CellDecision(StrEnum):
    """A cell's state in the ledger (``request_items.decision``)."""

    PENDING = "pending"
    SUBMITTED = "submitted"
    PUBLISHED = "published"
    REJECTED = "rejected"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELLED = "cancelled"
    # Reported, never stored: a published cell whose version was since rolled back (reconcile, request show).
    ROLLED_BACK = "rolled_back"


class RequestSource(StrEnum):
    """Where a request was made. CLI and Launchpad requests are planned and driven by the driver sensor; a
    Dagster backfill (the UI's dialog, ``dagster job backfill``) is adopted and run by Dagster's daemon."""

    CLI = "cli"
    LAUNCHPAD = "launchpad"
    DAGSTER = "dagster"


DRIVEN_SOURCES = (RequestSource.CLI, RequestSource.LAUNCHPAD)


# StrEnum members are the strings they stand for: rows read back compare equal, JSON and SQL see plain strings.
REPROCESS_POLICIES = tuple(ReprocessPolicy)
DOWNSTREAM_POLICIES = tuple(DownstreamPolicy)
ORDERS = tuple(Order)

WAITING, OPEN, BLOCKED, COMPLETED, CANCELLED, PAUSED = RequestStatus
# Not closed: the driver still visits them (a paused request's runs in flight are settled) and they hold claims.
ACTIVE_STATUSES = (WAITING, OPEN, BLOCKED, PAUSED)
# The statuses a pause may interrupt, and so the ones a resume restores.
PAUSABLE_STATUSES = (WAITING, OPEN, BLOCKED)
CLOSED_STATUSES = (COMPLETED, CANCELLED)

PENDING = CellDecision.PENDING
SUBMITTED = CellDecision.SUBMITTED
PUBLISHED = CellDecision.PUBLISHED
REJECTED = CellDecision.REJECTED
FAILED = CellDecision.FAILED
SKIPPED = CellDecision.SKIPPED
CELL_CANCELLED = CellDecision.CANCELLED
TERMINAL_CELLS = (PUBLISHED, REJECTED, FAILED, SKIPPED, CELL_CANCELLED)
SUCCESS_CELLS = (PUBLISHED, SKIPPED)

CONF_KEYS = ("inject_defect", "handoff_window_seconds")
MAX_CONF_BYTES = 64 * 1024
MAX_CONF_DEPTH = 8
MAX_ACTIVE_LIMIT = 64
MAX_PARTITIONS = 20_000
MAX_PARTITIONS_PER_RUN = 366
# ``--partitions-per-run auto`` (the default) resolves to a number at creation; the spec records which it was.
AUTO = "auto"
EXPLICIT = "explicit"
# Auto batches only when each run slot would otherwise start more than this many one-interval runs in a row. A
# run's fixed cost is its launch and worker start-up (docs/BENCHMARKS.md: 20 days over 2 slots took 90.7 s one
# interval per run, 30.9 s in 2 chunk runs), so it is the long requests that pay. Up to 3 intervals per slot the
# saving is at most 2 start-ups a slot, and a handful of days keep what a run per interval gives: one Dagster run
# per partition to open, cancel or re-run, and one slot that a slow day does not hold for its neighbours.
AUTO_MIN_INTERVALS_PER_SLOT = 3


def new_request_id(now: datetime) -> str:
    return f"req-{now.strftime('%Y%m%d')}-{secrets.token_hex(4)}"


@dataclass(frozen=True)
class RequestSpec:
    """A validated ``request create``: every field checked, the partition list expanded and frozen."""

    assets: tuple[str, ...]
    partitions: tuple[str, ...]
    reprocess: str = "failed"
    max_active: int = 2
    order: str = "forward"
    downstream: str = "none"
    confirm_cascade: bool = False
    allow_side_effects: tuple[str, ...] = ()
    approved_by: str | None = None
    conf: dict[str, Any] = field(default_factory=dict)
    reason: str = ""
    requested_by: str = "unknown"
    wait_for_overlap: bool = False
    partitions_per_run: int = 1
    # How partitions_per_run was chosen: "explicit", or "auto: <why>" (resolve_partitions_per_run).
    partitions_per_run_mode: str = EXPLICIT
    # Frozen at build time from the graph: a depends-on-past asset is selected, so intervals run one at a time.
    serial: bool = False
    # ``clear --only-failed``: only cells whose latest attempt failed (rejected, abandoned, or a run that died
    # before writing) are re-run; a cell that never ran is left alone too (reprocess=failed would run it).
    only_failed: bool = False

    @property
    def partitions_per_run_auto(self) -> bool:
        return self.partitions_per_run_mode.startswith(AUTO)

    @property
    def effective_max_active(self) -> int:
        # Depends-on-past intervals run strictly in order, one at a time.
        return 1 if self.serial else self.max_active

    def ordered_partitions(self) -> list[str]:
        return list(self.partitions) if self.order == "forward" else list(reversed(self.partitions))

    def side_effect_authorized(self, asset: str) -> bool:
        return asset in self.allow_side_effects and bool(self.approved_by)

    def excluded_cells(self, graph: AssetGraph) -> dict[tuple[str, str], str]:
        """Cells left out at creation: side-effecting assets the request did not authorize."""
        return {
            (asset, partition): "side effect not authorized"
            for asset in self.assets
            if graph[asset].side_effect and not self.side_effect_authorized(asset)
            for partition in self.partitions
        }

    def defect_for(self, partition: str, asset: str) -> str | None:
        return self.conf.get("inject_defect", {}).get(partition, {}).get(asset)

    def config_for(self, asset: str) -> dict[str, Any]:
        """The asset's own run config frozen in the request (every field, defaults filled), or {}."""
        return {} if asset in CONF_KEYS else dict(self.conf.get(asset) or {})


def parse_assets(graph: AssetGraph, selection: str) -> tuple[str, ...]:
    names = [s.strip() for s in (selection or "").split(",") if s.strip()]
    if not names:
        raise InvalidInput("--assets is empty; name one or more assets, comma-separated")
    if len(set(names)) != len(names):
        raise InvalidInput(f"--assets lists an asset twice: {selection!r}")
    for name in names:
        graph.require(name, data_only=False)
    return tuple(graph.topological(names))


def parse_conf(raw: str | None) -> dict[str, Any]:
    """``--conf`` JSON: bounded size and depth (so it can be stored and logged safely). Its keys are checked
    against the graph by ``validate_asset_sections``."""
    if raw is None or raw == "":
        return {}
    if len(raw.encode("utf-8", "surrogatepass")) > MAX_CONF_BYTES:
        raise InvalidInput(f"--conf is larger than {MAX_CONF_BYTES} bytes")
    try:
        conf = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InvalidInput(f"--conf is not valid JSON: {str(exc).splitlines()[0][:120]}") from exc
    if not isinstance(conf, dict):
        raise InvalidInput("--conf must be a JSON object")
    if _depth(conf) > MAX_CONF_DEPTH:
        raise InvalidInput(f"--conf is nested deeper than {MAX_CONF_DEPTH} levels")
    window = conf.get("handoff_window_seconds")
    if window is not None and (
        not isinstance(window, int) or isinstance(window, bool) or not 1 <= window <= 30 * 86400
    ):
        raise InvalidInput("--conf handoff_window_seconds must be an integer from 1 to 2592000")
    return conf


def _depth(value: Any, level: int = 1) -> int:
    if level > MAX_CONF_DEPTH + 1:
        return level
    if isinstance(value, dict):
        return max([_depth(v, level + 1) for v in value.values()] or [level])
    if isinstance(value, list):
        return max([_depth(v, level + 1) for v in value] or [level])
    return level


def _validate_defects(
    graph: AssetGraph, conf: dict[str, Any], partitions: tuple[str, ...], assets: tuple[str, ...]
) -> None:
    defects = conf.get("inject_defect", {})
    if not isinstance(defects, dict):
        raise InvalidInput('--conf inject_defect must map partition -> {asset: defect}')
    for key, per_asset in defects.items():
        if key not in partitions:
            raise InvalidInput(f"--conf inject_defect names partition {key!r}, which is not in the request")
        if not isinstance(per_asset, dict):
            raise InvalidInput(f"--conf inject_defect[{key!r}] must map asset -> defect")
        for asset, defect in per_asset.items():
            if asset not in assets:
                raise InvalidInput(f"--conf inject_defect[{key!r}] names asset {asset!r}, which is not selected")
            if graph[asset].side_effect:
                raise InvalidInput(f"--conf inject_defect: {asset} has no blocking checks to fail")
            if not isinstance(defect, str):
                raise InvalidInput(f"--conf inject_defect[{key!r}][{asset!r}] must be a string")
            validate_defect(defect)


def parse_partitions_per_run(value: object) -> int | str:
    """``--partitions-per-run`` as given (CLI text, Launchpad YAML): ``auto``, or an integer from 1 to
    MAX_PARTITIONS_PER_RUN (``"5"`` or ``5``); anything else is refused with one line."""
    if isinstance(value, str):
        text = value.strip()
        if text.lower() == AUTO:
            return AUTO
        if text.isascii() and text.isdigit():
            value = int(text)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_PARTITIONS_PER_RUN:
        return value
    raise InvalidInput(
        f"--partitions-per-run {value!r} must be {AUTO} or an integer from 1 to {MAX_PARTITIONS_PER_RUN}"
    )


def cascade_reach(graph: AssetGraph, assets: tuple[str, ...], downstream: str) -> tuple[str, ...]:
    """The assets whose cells the request may hold: its selection, and with ``--downstream cascade`` or
    ``handoff`` everything downstream of it (propagation, or an accepted handoff, adds their cells to the same
    request)."""
    reach = dict.fromkeys(assets)
    if downstream in (DownstreamPolicy.CASCADE, DownstreamPolicy.HANDOFF):
        todo = list(assets)
        while todo:
            for child in graph.downstream_of(todo.pop()):
                if child not in reach:
                    reach[child] = None
                    todo.append(child)
    return tuple(graph.topological(reach))


def resolve_partitions_per_run(
    graph: AssetGraph, assets: tuple[str, ...], downstream: str, intervals: int, max_active: int,
    requested: int | str = AUTO,
) -> tuple[int, str]:
    """The K a request freezes (the most consecutive intervals one run may take) and how it was chosen.

    An explicit K is kept. ``auto``: every interval when an asset the request may run depends on the past
    (capped at MAX_PARTITIONS_PER_RUN): its intervals run one after the other whatever K, so a chain gains
    nothing from splitting over slots and each run it saves is a launch and a driver pass; the batchable assets
    are still spread over the free slots, K being the most one run takes. Otherwise 1 when it has no batchable
    asset, or when there are at most AUTO_MIN_INTERVALS_PER_SLOT intervals per run slot; otherwise
    ceil(intervals / max_active), capped, so that every slot gets one chunk run.
    """
    requested = parse_partitions_per_run(requested)
    if requested != AUTO:
        return int(requested), EXPLICIT
    reach = cascade_reach(graph, assets, downstream)
    past = [a for a in reach if graph[a].depends_on_past]
    if past:
        k = max(1, min(intervals, MAX_PARTITIONS_PER_RUN))
        capped = " (the cap)" if intervals > k else ""
        return k, (f"{AUTO}: {', '.join(past)} depends on the past, so its {intervals} interval(s) run in order "
                   f"in as few runs as possible, up to {k} per run{capped}")
    if not any(a in graph.batchable_assets for a in reach):
        return 1, f"{AUTO}: no asset of the request can be batched, so one interval per run"
    per_slot = intervals / max_active
    if per_slot <= AUTO_MIN_INTERVALS_PER_SLOT:
        return 1, (
            f"{AUTO}: {intervals} interval(s) over {max_active} run slot(s) is at most "
            f"{AUTO_MIN_INTERVALS_PER_SLOT} per slot, so one interval per run"
        )
    k = min(math.ceil(per_slot), MAX_PARTITIONS_PER_RUN)
    capped = " (the cap)" if k == MAX_PARTITIONS_PER_RUN and math.ceil(per_slot) > k else ""
    return k, f"{AUTO}: {intervals} intervals over {max_active} run slot(s), up to {k} per run{capped}"


def _clean_name(value: str | None, what: str) -> str | None:
    if value is None:
        return None
    return validate_person_name(value, what)


def build_spec(
    graph: AssetGraph,
    newest_complete: str | None,
    *,
    assets: str,
    first: str,
    last: str,
    reprocess: str = "failed",
    max_active: int = 2,
    order: str = "forward",
    downstream: str = "none",
    confirm_cascade: bool = False,
    allow_side_effects: str | None = None,
    approved_by: str | None = None,
    conf: str | None = None,
    reason: str = "",
    requested_by: str = "unknown",
    wait_for_overlap: bool = False,
    partitions_per_run: int | str = AUTO,
    only_failed: bool = False,
) -> RequestSpec:
    selected = parse_assets(graph, assets)
    calendar = graph.calendar
    for value, allowed, what in (
        (reprocess, REPROCESS_POLICIES, "--reprocess"),
        (downstream, DOWNSTREAM_POLICIES, "--downstream"),
        (order, ORDERS, "--order"),
    ):
        if value not in allowed:
            raise InvalidInput(f"{what} {value!r} is not one of {', '.join(allowed)}")
    if not isinstance(max_active, int) or isinstance(max_active, bool) or not 1 <= max_active <= MAX_ACTIVE_LIMIT:
        raise InvalidInput(f"--max-active {max_active!r} must be between 1 and {MAX_ACTIVE_LIMIT}")
    if only_failed and reprocess != ReprocessPolicy.FAILED:
        raise InvalidInput(f"--only-failed re-runs failed cells only; it cannot go with --reprocess {reprocess}")
    requested_per_run = parse_partitions_per_run(partitions_per_run)
    parse_day(first, "--from")
    parse_day(last, "--to")
    # Before expanding the range: a far-future --to would otherwise build millions of keys first.
    if newest_complete is None or parse_day(last) > parse_day(newest_complete):
        raise InvalidInput(f"--to {last} is past the newest complete interval ({newest_complete or 'none yet'})")
    partitions = tuple(calendar.keys_between(first, last))
    if len(partitions) > MAX_PARTITIONS:
        raise InvalidInput(f"the range has {len(partitions)} partitions; at most {MAX_PARTITIONS} per request")
    side_effects = tuple(s.strip() for s in (allow_side_effects or "").split(",") if s.strip())
    for name in side_effects:
        if name not in graph or not graph[name].side_effect:
            raise InvalidInput(f"--allow-side-effects {name!r} is not a side-effecting asset")
    if side_effects and not approved_by:
        raise InvalidInput("--allow-side-effects needs --approved-by NAME")
    # An asset a cascade adds to the request runs with the same conf as a selected one.
    reach = cascade_reach(graph, selected, downstream)
    spec_conf = validate_asset_sections(graph, parse_conf(conf), selected, CONF_KEYS, reach=reach)
    _validate_defects(graph, spec_conf, partitions, selected)
    past = [a for a in selected if graph[a].depends_on_past]
    per_run, per_run_mode = resolve_partitions_per_run(
        graph, selected, downstream, len(partitions), max_active, requested_per_run
    )
    spec = RequestSpec(
        assets=selected,
        partitions=partitions,
        reprocess=reprocess,
        max_active=max_active,
        order=order,
        downstream=downstream,
        confirm_cascade=bool(confirm_cascade),
        allow_side_effects=side_effects,
        approved_by=_clean_name(approved_by, "--approved-by"),
        conf=spec_conf,
        reason=validate_text((reason or "").strip()[:2000], "--reason", 2000, line_breaks=True),
        requested_by=_clean_name(requested_by, "--requested-by") or "unknown",
        wait_for_overlap=bool(wait_for_overlap),
        partitions_per_run=per_run,
        partitions_per_run_mode=per_run_mode,
        serial=bool(past),
        only_failed=bool(only_failed),
    )
    if spec.order == "backward" and past:
        raise PlanError(f"--order backward is refused: {', '.join(past)} depends on the past and runs forward only")
    return spec
