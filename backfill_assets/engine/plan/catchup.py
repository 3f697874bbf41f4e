"""When production runs: which complete intervals the production trigger submits now, in order, and why it passes
over the others (Airflow's ``catchup``) — a pure function of the calendar, the clock, the trigger's cursor and
what is true of each cell now.

- The **cursor** is the last interval production handled (submitted, or skipped because nothing was left to do).
  Everything after it up to the newest due interval is what production missed.
- **catchup on**: every missed interval, oldest first. **catchup off**: only the newest; the missed ones before it
  are passed over (a request backfills them).
- **First start** (no cursor yet): the newest due interval only — production starts now, it does not replay the
  calendar from its first day. ``start`` (Airflow's ``start_date``) is the first interval production ever runs:
  with catchup on and no cursor, production catches up from it.
- A cell with a published version or a queued or running run (from any source) is never submitted again.
- A depends-on-past asset's intervals go one after another: an interval that needs it waits until its previous
  interval is published; one whose previous interval has no published version (and none coming) runs without it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta, timezone
from enum import Enum
from typing import Callable

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import BusinessCalendar, parse_day

# An interval is due one hour after it ends, as under the daily schedule this trigger replaces (01:00 business
# time for the day that just ended): source rows of the day that land late still get an hour.
DUE_AFTER = timedelta(hours=1)

PUBLISHED = "published"
IN_FLIGHT = "in flight: {}"
CATCHUP_OFF = "catchup off: only the newest complete interval {} runs"
WAITS_FOR_RUNS = "{} of this interval still running ({}); {} wait for it"
WAITS_BEHIND = "behind {}: intervals run in order"
PREVIOUS_SUBMITTED = "{} depends on its previous interval {}, submitted just before: one after another"
PREVIOUS_RUNNING = "{} depends on its previous interval {}, still running (run {})"
PREVIOUS_NOT_PUBLISHED = "{} left out: its previous interval {} has no published version (backfill it with a request)"
NO_VERSION = "no published version"
FIRST_START = "first start: production begins at {}; earlier intervals are a request's job"


class Action(str, Enum):
    SUBMIT = "submit"  # one production run of ``assets`` for the interval
    SKIP = "skip"  # handled: nothing left for production to do (or catchup off passed over it)
    WAIT = "wait"  # not handled yet: asked again on the next evaluation


@dataclass(frozen=True, init=False)
class CatchupSettings:
    """How production treats the intervals it missed. ``start``: a date or ``YYYY-MM-DD``, or None."""

    catchup: bool = True
    start: date | None = None

    def __init__(self, catchup: bool = True, start: date | str | None = None) -> None:  # the text form too
        object.__setattr__(self, "catchup", catchup)
        object.__setattr__(self, "start", start)
        self.__post_init__()

    def __post_init__(self) -> None:
        if not isinstance(self.catchup, bool):
            raise InvalidInput(f"catchup must be True or False, not {self.catchup!r}")
        if isinstance(self.start, str):
            object.__setattr__(self, "start", parse_day(self.start, "production_start"))
        elif self.start is not None and (not isinstance(self.start, date) or isinstance(self.start, datetime)):
            raise InvalidInput(f"production_start {self.start!r} is not a date (YYYY-MM-DD)")

    def check(self, calendar: BusinessCalendar) -> CatchupSettings:
        if self.start is not None and self.start < calendar.first_day:
            raise InvalidInput(f"production_start {self.start.isoformat()} is before the calendar's first day "
                               f"{calendar.first_day.isoformat()}")
        return self


@dataclass(frozen=True)
class CellNow:
    """What production needs to know of one (asset, interval) cell."""

    published: bool = False  # it has a current (published) version: production never replaces it
    in_flight_run_id: str | None = None  # a queued or running run, from any source, will write it


@dataclass(frozen=True)
class IntervalDecision:
    partition: str
    action: Action
    reason: str
    assets: tuple[str, ...] = ()  # SUBMIT: the assets of the run, in topological order

    @property
    def label(self) -> str:
        return f"{self.partition} {self.action.value}: {self.reason}"


@dataclass(frozen=True)
class DueIntervals:
    """The complete intervals after the cursor: ``candidates`` to decide (oldest first) and ``passed_over`` (catchup
    off). ``after`` is the interval before the first of them: the cursor when none of them is handled."""

    candidates: tuple[str, ...] = ()
    passed_over: tuple[str, ...] = ()
    after: str | None = None


@dataclass(frozen=True)
class ProductionPlan:
    decisions: tuple[IntervalDecision, ...] = ()
    cursor: str | None = None  # the last interval handled, after this plan
    notes: tuple[str, ...] = ()

    @property
    def submissions(self) -> list[IntervalDecision]:
        return [d for d in self.decisions if d.action == Action.SUBMIT]


def due_intervals(calendar: BusinessCalendar, now: datetime, cursor: str | None,
                  settings: CatchupSettings) -> DueIntervals:
    """Which intervals production has to decide at ``now``, given the last one it handled (``cursor``)."""
    if not isinstance(now, datetime) or now.tzinfo is None:
        raise InvalidInput(f"the production clock must give a timezone-aware datetime, not {now!r}")
    handled = None if cursor is None else parse_day(cursor, "production trigger cursor")
    # In UTC: an aware datetime in a DST zone subtracts wall-clock time, not elapsed time.
    newest_key = calendar.newest_complete_key(now.astimezone(timezone.utc) - DUE_AFTER)
    if newest_key is None:
        return DueIntervals(after=cursor)
    newest = date.fromisoformat(newest_key)
    floor = max(calendar.first_day, settings.start or calendar.first_day)
    if handled is None:
        # First start: production begins at the newest interval, or at ``start`` when told to catch up from it.
        first = settings.start if settings.catchup and settings.start else newest
        handled = first - timedelta(days=1)
    first = max(handled + timedelta(days=1), floor)
    if first > newest:
        return DueIntervals(after=cursor)
    days = [(first + timedelta(days=n)).isoformat() for n in range((newest - first).days + 1)]
    after = (first - timedelta(days=1)).isoformat()
    if settings.catchup:
        return DueIntervals(tuple(days), (), after)
    return DueIntervals((days[-1],), tuple(days[:-1]), after)


def production_delivers(calendar: BusinessCalendar, day: str, now: datetime) -> bool:
    """Whether a production run delivers ``day``'s side effects at ``now`` without an approver: only for the
    newest due interval, the one production runs today. A missed day it catches up gets its data; its side
    effects (an alert about an older day) wait for a person's approval, as a backfill's do."""
    newest = calendar.newest_complete_key(now.astimezone(timezone.utc) - DUE_AFTER)
    return newest is not None and day == newest


def cells_to_read(graph: AssetGraph, due: DueIntervals) -> list[tuple[str, str]]:
    """The cells whose facts ``plan_production`` asks for: every asset of each candidate interval, and the
    depends-on-past assets' interval before the first candidate."""
    cells = [(asset, key) for key in due.candidates for asset in graph.data_assets]
    if due.candidates:
        previous = graph.calendar.previous_key(due.candidates[0])
        if previous is not None:
            cells += [(s.name, previous) for s in graph if s.depends_on_past]
    return cells


def plan_production(
    graph: AssetGraph,
    *,
    now: datetime,
    cursor: str | None,
    settings: CatchupSettings,
    facts_of: Callable[[str, str], CellNow],
) -> ProductionPlan:
    """The intervals to submit now, in order, and why each other due interval is skipped or waits."""
    due = due_intervals(graph.calendar, now, cursor, settings)
    decisions = [IntervalDecision(k, Action.SKIP, CATCHUP_OFF.format(due.candidates[-1])) for k in due.passed_over]
    last_handled = due.passed_over[-1] if due.passed_over else due.after
    # Per asset, the intervals this plan submits it for: a depends-on-past asset's next interval waits for them.
    submitted: dict[str, set[str]] = {}
    for n, key in enumerate(due.candidates):
        decision = _decide_interval(graph, key, facts_of, submitted)
        decisions.append(decision)
        if decision.action == Action.WAIT:
            decisions += [IntervalDecision(k, Action.WAIT, WAITS_BEHIND.format(key)) for k in due.candidates[n + 1:]]
            break
        for asset in decision.assets:
            submitted.setdefault(asset, set()).add(key)
        last_handled = key
    notes = (FIRST_START.format(due.candidates[0]),) if cursor is None and due.candidates else ()
    return ProductionPlan(tuple(decisions), last_handled, notes)


def _decide_interval(
    graph: AssetGraph, key: str, facts_of: Callable[[str, str], CellNow], submitted: dict[str, set[str]]
) -> IntervalDecision:
    cells = {asset: facts_of(asset, key) for asset in graph.data_assets}
    running = {a: c.in_flight_run_id for a, c in cells.items() if not c.published and c.in_flight_run_id}
    needed = [a for a, c in cells.items() if not c.published and not c.in_flight_run_id]
    if not needed:
        reason = IN_FLIGHT.format(_runs(running)) if running else PUBLISHED
        return IntervalDecision(key, Action.SKIP, reason)
    if running:
        # Never beside another run of the same interval: what it leaves unpublished is decided once it is done.
        return IntervalDecision(key, Action.WAIT, WAITS_FOR_RUNS.format(", ".join(running), _runs(running),
                                                                        ", ".join(needed)))
    notes: list[str] = []
    left_out: set[str] = set()
    previous = graph.calendar.previous_key(key)
    for asset in needed:
        if not graph[asset].depends_on_past or previous is None or asset in left_out:
            continue
        if previous in submitted.get(asset, ()):
            return IntervalDecision(key, Action.WAIT, PREVIOUS_SUBMITTED.format(asset, previous))
        before = facts_of(asset, previous)
        if before.published:
            continue
        if before.in_flight_run_id:
            return IntervalDecision(key, Action.WAIT, PREVIOUS_RUNNING.format(asset, previous,
                                                                              before.in_flight_run_id[:8]))
        # Never computed around a gap: the asset (and what reads it) waits for a request to fill the gap.
        left_out |= {asset, *_descendants(graph, asset)}
        notes.append(PREVIOUS_NOT_PUBLISHED.format(asset, previous))
    runnable = [a for a in needed if a not in left_out]
    if not runnable:
        return IntervalDecision(key, Action.SKIP, "; ".join(notes))
    # A side effect runs with the run that publishes its inputs (its outbox makes a repeat a no-op).
    effects = [s.name for s in graph if s.side_effect and set(s.upstream) & set(runnable)]
    published = [a for a, c in cells.items() if c.published]
    reason = NO_VERSION + (f" (already published: {', '.join(published)})" if published else "")
    return IntervalDecision(key, Action.SUBMIT, "; ".join([reason, *notes]),
                            tuple(graph.topological([*runnable, *effects])))


def _runs(running: dict[str, str]) -> str:
    return ", ".join(sorted({f"run {run_id[:8]}" for run_id in running.values()}))


def _descendants(graph: AssetGraph, asset: str) -> set[str]:
    found: set[str] = set()
    stack = [asset]
    while stack:
        for child in graph.downstream_of(stack.pop()):
            if child not in found:
                found.add(child)
                stack.append(child)
    return found
