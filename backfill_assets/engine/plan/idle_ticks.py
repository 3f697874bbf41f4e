"""The driver's idle ticks, recognised without reading a request's cells.

Most ticks of a long request find every run slot taken and nothing changed: they read its thousands of cells to
decide nothing. ``tick`` is a function of what it is given, so a tick given what the last tick of the request was
given, when that one changed nothing, changes nothing either. ``IdleTicks`` remembers, per request, what a tick
that changed nothing was given (``TickInputs``); the driver compares the next tick's inputs, read cheaply, with
them and skips the tick when they are equal.

What a tick that changed nothing depended on is all in ``TickInputs``: it decided no cell (a decision is always
recorded), so no cell's facts were read; no run of its cells had finished (one would have been settled), so no
version was read; no submitted cell's run was missing (the re-request waits on the clock, so such a tick is never
remembered). What is left is the ledger (``LedgerState``), the runs of the request and those its following cells
wait for, the code version loaded, whether the instance queues ahead, and why the request is held open.

A remembered tick is trusted for ``FULL_TICK_SECONDS`` only, then the request is ticked in full again: should a
change ever reach a request by a way ``TickInputs`` does not see, it waits that long, never forever.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable

from backfill_assets.engine.plan.settling import RunView
from backfill_assets.engine.store.tick_tokens import LedgerState

# A full tick of a ten-year request costs ~0.1 s of CPU: once every half minute is a small price for the bound.
FULL_TICK_SECONDS = 30.0


@dataclass(frozen=True)
class TickInputs:
    """What a driver tick of one request is given, but for its cells (``ledger`` stands for them)."""

    ledger: LedgerState
    runs_by_key: tuple[tuple[str, RunView], ...]
    followed: tuple[tuple[str, RunView], ...]
    loaded_code_version: str
    queue_ahead: bool
    hold_open: str | None

    @staticmethod
    def runs(views: dict[str, RunView]) -> tuple[tuple[str, RunView], ...]:
        return tuple(sorted(views.items()))


@dataclass
class IdleTicks:
    """Per request, the inputs of its last tick that changed nothing, and the runs its following cells wait for
    then (what to ask Dagster for when checking the next tick). One per driver (a code server's sensor)."""

    full_tick_seconds: float = FULL_TICK_SECONDS
    clock: Callable[[], float] = time.monotonic
    _last: dict[str, tuple[TickInputs, tuple[str, ...], float]] = field(default_factory=dict)

    def remember(self, request_id: str, inputs: TickInputs, followed_run_ids: tuple[str, ...]) -> None:
        self._last[request_id] = (inputs, followed_run_ids, self.clock())

    def forget(self, request_id: str) -> None:
        self._last.pop(request_id, None)

    def keep(self, request_ids: set[str]) -> None:
        """Forget every request but these (the open ones): a closed request is never ticked again."""
        for request_id in [r for r in self._last if r not in request_ids]:
            del self._last[request_id]

    def followed_run_ids(self, request_id: str) -> tuple[str, ...] | None:
        """The runs the request's following cells waited for at its remembered tick; None when none is remembered."""
        last = self._last.get(request_id)
        return last[1] if last is not None else None

    def unchanged(self, request_id: str, inputs: TickInputs) -> bool:
        """Whether a tick given ``inputs`` would change nothing: they are those of the request's remembered tick,
        remembered less than ``full_tick_seconds`` ago."""
        last = self._last.get(request_id)
        if last is None or self.clock() - last[2] >= self.full_tick_seconds:
            return False
        return last[0] == inputs
