"""What a user asks for (``RequestInput``: lists, enums, dates, parsed conf) and its validation into the frozen
``RequestSpec``: one validation for every surface. Errors are ``InvalidField``s naming the input's fields
(``to_day``, ``max_active``); the CLI words them as its flags, the Launchpad as its config keys."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import date
from enum import StrEnum
from typing import Any, TypeVar

from backfill_assets.engine.model.day_order import declared_pace, resolve_max_active, resolve_order
from backfill_assets.engine.model.errors import InvalidField
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.identity import validate_person_name, validate_text
from backfill_assets.engine.model.intervals import PARTITION_KEY_FORMAT, BusinessCalendar, parse_day
from backfill_assets.engine.model.numbers import require_finite
from backfill_assets.engine.model.request_model import (
    AUTO,
    AUTO_MIN_INTERVALS_PER_SLOT,
    CONF_KEYS,
    MAX_ACTIVE_LIMIT,
    MAX_CONF_BYTES,
    MAX_CONF_DEPTH,
    MAX_PARTITIONS,
    MAX_PARTITIONS_PER_RUN,
    DownstreamPolicy,
    Order,
    PerRunMode,
    ReprocessPolicy,
    RequestSpec,
)
from backfill_assets.engine.model.run_conf import validate_asset_sections

MAX_REASON = 2000
# Source rows `seed` writes per business day (a demo source: the examples seed 300 to 2,000).
MAX_SEED_ROWS_PER_DAY = 100_000
Choice = TypeVar("Choice", bound=StrEnum)


@dataclass(frozen=True, kw_only=True)
class RequestOptions:
    """What a request takes besides its cells (pace, policies, conf, who and why): shared by ``RequestInput`` and
    ``clear``'s ``ClearInput``."""

    # None: what the request's assets declare (engine/model/day_order.py); a contradicting choice is refused.
    max_active: int | None = None
    order: Order | str | None = None
    partitions_per_run: int | str = AUTO
    downstream: DownstreamPolicy | str = DownstreamPolicy.NONE
    confirm_cascade: bool = False
    allow_side_effects: Sequence[str] = ()
    approved_by: str | None = None
    conf: Mapping[str, Any] = field(default_factory=dict)
    reason: str = ""
    requested_by: str | None = None
    wait_for_overlap: bool = False

    def options(self) -> dict[str, Any]:
        """These fields by name, to build another input with the same options."""
        return {f.name: getattr(self, f.name) for f in fields(RequestOptions)}


@dataclass(frozen=True)
class RequestInput(RequestOptions):
    """A backfill request as asked, before validation. Every surface builds one: the CLI from its flags, the
    Launchpad from its config, a Python caller directly. Days are ``date``s or ``YYYY-MM-DD`` text; policies are
    the enums or their values; ``conf`` is a parsed mapping (an asset's own config by asset name, and the
    library's keys, e.g. ``handoff_window_seconds``). The options (``RequestOptions``) are keyword-only."""

    assets: Sequence[str]
    from_day: date | str
    to_day: date | str
    reprocess: ReprocessPolicy | str = ReprocessPolicy.FAILED
    # Only cells whose latest attempt failed are re-run (Airflow's clear --only-failed); needs reprocess failed.
    only_failed: bool = False


def build_spec(graph: AssetGraph, newest_complete: str | None, asked: RequestInput) -> RequestSpec:
    """Validate ``asked`` into a frozen spec; raises ``InvalidField`` (or ``PlanError``) with one line."""
    selected = parse_assets(graph, asked.assets)
    reprocess = choice(ReprocessPolicy, asked.reprocess, "reprocess")
    downstream = choice(DownstreamPolicy, asked.downstream, "downstream")
    order = None if asked.order is None else choice(Order, asked.order, "order")
    max_active = asked.max_active
    if max_active is not None and (
        not isinstance(max_active, int) or isinstance(max_active, bool) or not 1 <= max_active <= MAX_ACTIVE_LIMIT
    ):
        raise InvalidField("{max_active} {value!r} must be between 1 and {limit}", value=max_active,
                           limit=MAX_ACTIVE_LIMIT)
    if asked.only_failed and reprocess != ReprocessPolicy.FAILED:
        raise InvalidField("{only_failed} re-runs failed cells only; it cannot go with {reprocess} {value}",
                           value=reprocess.value)
    requested_per_run = parse_partitions_per_run(asked.partitions_per_run)
    partitions = bounded_days(graph.calendar, asked.from_day, asked.to_day, newest_complete)
    side_effects = _side_effects(graph, asked.allow_side_effects, asked.approved_by)
    # An asset a cascade adds to the request runs with the same conf as a selected one.
    reach = cascade_reach(graph, selected, downstream)
    spec_conf = validate_asset_sections(graph, check_conf(asked.conf), selected, CONF_KEYS, reach=reach)
    # The order and pace the selected assets declare (strictest wins); the operator's may repeat, not contradict.
    pace = declared_pace(graph, selected)
    order = Order(resolve_order(graph, pace, order))
    max_active = resolve_max_active(graph, pace, max_active)
    per_run, per_run_mode, per_run_reason = resolve_partitions_per_run(
        graph, selected, downstream, len(partitions), max_active, requested_per_run
    )
    return RequestSpec(
        assets=selected, partitions=partitions, reprocess=reprocess, max_active=max_active, order=order,
        downstream=downstream, confirm_cascade=bool(asked.confirm_cascade), allow_side_effects=side_effects,
        approved_by=_clean_name(asked.approved_by, "approved_by"), conf=spec_conf,
        # Refused when too long, never cut: a request's reason is its record of why.
        reason=validate_text((asked.reason or "").strip(), "{reason}", MAX_REASON, line_breaks=True),
        requested_by=_clean_name(asked.requested_by, "requested_by") or "unknown",
        wait_for_overlap=bool(asked.wait_for_overlap), partitions_per_run=per_run,
        partitions_per_run_mode=per_run_mode, partitions_per_run_reason=per_run_reason, serial=bool(pace.serial),
        only_failed=bool(asked.only_failed),
    )


def bounded_days(
    calendar: BusinessCalendar, from_day: date | str, to_day: date | str, newest_complete: str | None
) -> tuple[str, ...]:
    """The partition keys of ``from_day..to_day`` under the rule every request (and ``seed``) follows: none past
    the newest complete interval, at most MAX_PARTITIONS of them."""
    first, last = day_text(from_day, "from_day"), day_text(to_day, "to_day")
    # Before expanding the range: a far-future to_day would otherwise build millions of keys first.
    if newest_complete is None or parse_day(last) > parse_day(newest_complete):
        raise InvalidField("{to_day} {value} is past the newest complete interval ({newest})", value=last,
                           newest=newest_complete or "none yet")
    partitions = tuple(calendar.keys_between(first, last))
    if len(partitions) > MAX_PARTITIONS:
        raise InvalidField("{from_day}..{to_day} has {count} partitions; at most {limit} per request",
                           count=len(partitions), limit=MAX_PARTITIONS)
    return partitions


def seed_days(
    calendar: BusinessCalendar, from_day: str, to_day: str, per_day: object, newest_complete: str | None
) -> tuple[str, ...]:
    """The days ``seed`` fills, checked before anything is written: the days a request over them could take
    (``bounded_days``), and at most MAX_SEED_ROWS_PER_DAY source rows a day."""
    if not isinstance(per_day, int) or isinstance(per_day, bool) or not 1 <= per_day <= MAX_SEED_ROWS_PER_DAY:
        raise InvalidField("{per_day} {value!r} must be a whole number from 1 to {limit}", value=per_day,
                           limit=MAX_SEED_ROWS_PER_DAY)
    return bounded_days(calendar, from_day, to_day, newest_complete)


def choice(kind: type[Choice], value: object, name: str) -> Choice:
    """``value`` as the enum ``kind`` (a member or its value), or an error listing the allowed values."""
    try:
        if isinstance(value, str):  # a member is one too
            return kind(value)
    except ValueError:
        pass
    raise InvalidField("{%s} {value!r} is not one of {allowed}" % name, value=value,
                       allowed=", ".join(kind)) from None


def day_text(value: object, name: str) -> str:
    """A day given as a ``date`` or as ``YYYY-MM-DD`` text, checked, as its partition-key text."""
    if isinstance(value, date):
        return value.strftime(PARTITION_KEY_FORMAT)
    parse_day(value, "{%s}" % name)  # refuses anything but YYYY-MM-DD text
    return str(value)


def parse_assets(graph: AssetGraph, names: Sequence[str]) -> tuple[str, ...]:
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise InvalidField("{assets} must be a list of asset names, not {value!r}", value=names)
    names = [n.strip() for n in names if n.strip()]
    if not names:
        raise InvalidField("{assets} is empty; name one or more assets")
    if len(set(names)) != len(names):
        raise InvalidField("{assets} lists an asset twice: {value}", value=", ".join(names))
    for name in names:
        graph.require(name, data_only=False)
    return tuple(graph.topological(names))


def parse_asset_list(text: str | None) -> list[str]:
    """Comma-separated names as a list (how the CLI takes ``--assets`` and ``--allow-side-effects``)."""
    return [s.strip() for s in (text or "").split(",") if s.strip()]


def parse_conf_text(raw: str | None) -> dict[str, Any]:
    """Conf given as JSON text (``--conf``, the Launchpad's ``conf``): bounded size, an object, then
    ``check_conf`` (which refuses ``NaN``, ``Infinity`` and ``1e999``: Python's ``json`` reads them as floats)."""
    if raw is None or raw == "":
        return {}
    if len(raw.encode("utf-8", "surrogatepass")) > MAX_CONF_BYTES:
        raise InvalidField("{conf} is larger than {limit} bytes", limit=MAX_CONF_BYTES)
    try:
        conf = json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InvalidField("{conf} is not valid JSON: {why}", why=str(exc).splitlines()[0]) from exc
    if not isinstance(conf, dict):
        raise InvalidField("{conf} must be a JSON object")
    return check_conf(conf)


def check_conf(conf: object) -> dict[str, Any]:
    """A request's conf: an object, bounded in depth (so it can be stored and logged safely), its numbers finite
    (an audit cannot compare infinity or NaN). Its keys are checked against the graph by
    ``validate_asset_sections``."""
    if not isinstance(conf, Mapping):
        raise InvalidField("{conf} must be an object (a mapping), not {kind}", kind=type(conf).__name__)
    if _depth(conf) > MAX_CONF_DEPTH:
        raise InvalidField("{conf} is nested deeper than {limit} levels", limit=MAX_CONF_DEPTH)
    require_finite(conf, "{conf}")
    if len(json.dumps(conf, default=str).encode("utf-8", "surrogatepass")) > MAX_CONF_BYTES:
        raise InvalidField("{conf} is larger than {limit} bytes", limit=MAX_CONF_BYTES)
    window = conf.get("handoff_window_seconds")
    if window is not None and (
        not isinstance(window, int) or isinstance(window, bool) or not 1 <= window <= 30 * 86400
    ):
        raise InvalidField("{conf} handoff_window_seconds must be an integer from 1 to 2592000")
    return dict(conf)


def _depth(value: Any, level: int = 1) -> int:
    if level > MAX_CONF_DEPTH + 1:
        return level
    if isinstance(value, Mapping):
        return max([_depth(v, level + 1) for v in value.values()] or [level])
    if isinstance(value, list | tuple):
        return max([_depth(v, level + 1) for v in value] or [level])
    return level


def parse_partitions_per_run(value: object) -> int | str:
    """``partitions_per_run`` as given (CLI text, Launchpad YAML, Python): ``auto``, or an integer from 1 to
    MAX_PARTITIONS_PER_RUN (``"5"`` or ``5``); anything else is refused with one line."""
    if isinstance(value, str):
        text = value.strip()
        if text.lower() == AUTO:
            return AUTO
        if text.isascii() and text.isdigit():
            value = int(text)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_PARTITIONS_PER_RUN:
        return value
    raise InvalidField("{partitions_per_run} {value!r} must be {auto} or an integer from 1 to {limit}",
                       value=value, auto=AUTO, limit=MAX_PARTITIONS_PER_RUN)


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
) -> tuple[int, PerRunMode, str | None]:
    """The K a request freezes (the most consecutive intervals one run may take), how it was chosen, and why (for
    ``auto``).

    An explicit K is kept. ``auto``: every interval when an asset the request may run depends on the past
    (capped at MAX_PARTITIONS_PER_RUN): its intervals run one after the other whatever K, so a chain gains
    nothing from splitting over slots and each run it saves is a launch and a driver pass; the batchable assets
    are still spread over the free slots, K being the most one run takes. Otherwise 1 when it has no batchable
    asset, or when there are at most AUTO_MIN_INTERVALS_PER_SLOT intervals per run slot; otherwise
    ceil(intervals / max_active), capped, so that every slot gets one chunk run.
    """
    requested = parse_partitions_per_run(requested)
    if requested != AUTO:
        return int(requested), PerRunMode.EXPLICIT, None
    reach = cascade_reach(graph, assets, downstream)
    past = [a for a in reach if graph[a].depends_on_past]
    if past:
        k = max(1, min(intervals, MAX_PARTITIONS_PER_RUN))
        capped = " (the cap)" if intervals > k else ""
        return k, PerRunMode.AUTO, (f"{', '.join(past)} depends on the past, so its {intervals} interval(s) run "
                                    f"in order in as few runs as possible, up to {k} per run{capped}")
    if not any(a in graph.batchable_assets for a in reach):
        return 1, PerRunMode.AUTO, "no asset of the request can be batched, so one interval per run"
    per_slot = intervals / max_active
    if per_slot <= AUTO_MIN_INTERVALS_PER_SLOT:
        return 1, PerRunMode.AUTO, (
            f"{intervals} interval(s) over {max_active} run slot(s) is at most "
            f"{AUTO_MIN_INTERVALS_PER_SLOT} per slot, so one interval per run"
        )
    k = min(math.ceil(per_slot), MAX_PARTITIONS_PER_RUN)
    capped = " (the cap)" if k == MAX_PARTITIONS_PER_RUN and math.ceil(per_slot) > k else ""
    return k, PerRunMode.AUTO, f"{intervals} intervals over {max_active} run slot(s), up to {k} per run{capped}"


def _side_effects(graph: AssetGraph, names: Sequence[str], approved_by: str | None) -> tuple[str, ...]:
    if isinstance(names, str):
        raise InvalidField("{allow_side_effects} must be a list of asset names, not {value!r}", value=names)
    chosen = tuple(n.strip() for n in names if isinstance(n, str) and n.strip())
    for name in chosen:
        if name not in graph or not graph[name].side_effect:
            raise InvalidField("{allow_side_effects} {value!r} is not a side-effecting asset", value=name)
    if chosen:
        if not approved_by:
            raise InvalidField("{allow_side_effects} needs {approved_by} (who approved the side effects)")
        graph.access.require_approver(approved_by, f"side effects ({', '.join(chosen)})")
    return chosen


def _clean_name(value: str | None, name: str) -> str | None:
    return None if value is None else validate_person_name(value, "{%s}" % name)
