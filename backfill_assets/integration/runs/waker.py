"""What wakes ``backfill-assets-daemon``'s loops: new work, seen as it happens instead of at the next timer pass.

Dagster's daemon passes over sensors every 5 s and over backfills every 30 s, whatever is waiting. The waker
watches, every ``poll_seconds``, three cheap signals and wakes the loops when one changes:

- the wake-up file (``engine/store/wakeup.py``), touched when a request is made, resumed or confirmed, or a
  cascade is queued: the driver sensor submits its first runs at once;
- the newest finished run in Dagster's run storage (any launcher, any host): the driver settles it and submits the
  next day of a depends-on-past chain, the run queue fills the freed slot, Dagster's backfill daemon requests the
  next partition of a backfill launched from the UI. A run forked by the warm launcher also touches the wake-up
  file when it ends, so the usual run is seen at once and the storage is only read once a second;
- the number of active Dagster backfills: a backfill launched from the UI starts at once.

A run submitted in this process (a sensor's, a backfill's) wakes the run queue directly (``notify``). Each loop
still passes on its own timer when nothing happens (the backstop), and never more often than its minimum spacing,
so a burst of finished runs costs one pass, not one per run.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

import dagster as dg

from backfill_assets.engine.store.wakeup import create_wakeup_file, wakeup_stamp
from backfill_assets.integration.runs.dagster_adapter import active_backfill_count, code_location_origins

logger = logging.getLogger("backfill_assets.waker")

FINISHED = [dg.DagsterRunStatus.SUCCESS, dg.DagsterRunStatus.FAILURE, dg.DagsterRunStatus.CANCELED]
# How often the wake-up file is read (a stat): a request's first run waits at most this long to be noticed.
DEFAULT_POLL_SECONDS = 0.05
# Dagster's storage is read less often (each read is a query; at 20 a second they cost the idle daemon a fifth of a
# core; at 5 a second still a third of its idle CPU): finished runs and the number of active backfills once a
# second (about 20 polls). A run forked by the warm launcher does not wait for it: it touches the wake-up file.
RUNS_EVERY_POLLS = 20
BACKFILLS_EVERY_POLLS = 20
# The least time between two passes of a loop woken by the waker (a loop's own timer is not shortened).
MIN_SPACING_SECONDS = {"sensor": 0.2, "backfill": 0.5, "queue": 0.0}
# A woken sensor pass skips a sensor evaluated less than its minimum interval (1 s, Dagster's smallest) before it,
# a tick can fail, a code location can still be loading: a wake is only served once every sensor has finished a
# tick that started after it. Until then the loop passes again as soon as one can be evaluated (at least
# RETRY_SECONDS apart), for at most GIVE_UP_SECONDS (then its timer is the backstop, as for a lost hint).
RETRY_SECONDS = 0.1
GIVE_UP_SECONDS = 30.0
# How often the daemon looks for STARTING runs whose forked worker died (run monitoring's own pace).
STARTING_CHECK_SECONDS = 5.0
# The loops whose timer ``backstop_seconds`` replaces (the run queue keeps its dequeue_interval_seconds).
BACKSTOPPED = ("sensor", "backfill")

_current: Waker | None = None


def current_waker() -> Waker | None:
    """The waker of this process's daemon, if this process is ``backfill-assets-daemon``."""
    return _current


@dataclass
class Channel:
    """One loop's view: the wake-up generation it last consumed, when it last woke, and the wall-clock time of the
    latest wake it consumed but has not served yet (``owed_since``)."""

    seen: int = 0
    woke_at: float = 0.0
    retry_at: float | None = None
    owed_since: float | None = None


@dataclass
class Waker:
    instance: dg.DagsterInstance
    home: Path
    poll_seconds: float = DEFAULT_POLL_SECONDS
    min_spacing: dict[str, float] = field(default_factory=lambda: dict(MIN_SPACING_SECONDS))
    retry_seconds: float = RETRY_SECONDS
    # Replaces the timer of the sensor and backfill loops (Dagster's 5 s and 30 s) when set: the pass nothing woke.
    backstop_seconds: float | None = None

    def __post_init__(self) -> None:
        self._condition = threading.Condition()
        self._generation = 0
        self._notified_at = time.time()  # wall clock, as Dagster's sensor timestamps
        self._started_at = self._notified_at
        self._starting_checked_at = time.monotonic()
        self._cut_short: set[str] = set()  # runs whose launch by the run queue raised
        self._channels: dict[str, Channel] = {}
        self._stop = threading.Event()
        self._finished_after = datetime.now(timezone.utc)
        create_wakeup_file(self.home)
        self._stamp, self._backfills, self._polls = wakeup_stamp(self.home), self._active_backfills(), 0

    # --- the loops' side ------------------------------------------------------------------------------------------

    def wait(self, shutdown: threading.Event, timeout: float | None, channel: str) -> bool:
        """Wait up to ``timeout`` s, less if woken (after the channel's minimum spacing); True at shutdown."""
        if self.backstop_seconds is not None and channel in BACKSTOPPED:
            timeout = self.backstop_seconds
        deadline = time.monotonic() + (timeout if timeout is not None else 3600.0)
        with self._condition:
            state = self._channel(channel)
            if state.retry_at is not None:
                deadline, state.retry_at = min(deadline, state.retry_at), None
            while not shutdown.is_set():
                now = time.monotonic()
                earliest = state.woke_at + self.min_spacing.get(channel, 0.0)
                if now >= deadline or (self._generation != state.seen and now >= earliest):
                    break
                pause = min(deadline, earliest) - now if self._generation != state.seen else deadline - now
                self._condition.wait(max(0.0, min(pause, 0.5)))
            self._consume(state)
        return shutdown.is_set()

    def _channel(self, name: str) -> Channel:
        """``name``'s view, made on first use as of the waker's start: a wake that came before a loop first waits
        (e.g. while the daemon's first pass was still loading the code location) is still owed to it."""
        return self._channels.setdefault(name, Channel())

    def _consume(self, state: Channel) -> None:
        """A pass is starting (woken or on its timer): the wakes before it are owed to it until it serves them."""
        if self._generation != state.seen:
            state.owed_since = self._notified_at
        state.seen, state.woke_at = self._generation, time.monotonic()

    def pass_finished(self, channel: str, pending: Callable[[float], float | None]) -> None:
        """After a pass of ``channel``: ``pending(since)`` is None once every instigator of the loop finished an
        evaluation that started at or after the wall-clock time ``since`` (so acted on what woke it), otherwise the
        seconds until a pass can evaluate one that has not (skipped for its minimum interval, a failed tick, a code
        location still loading): the next pass comes then (at least ``retry_seconds`` on), not at the timer."""
        with self._condition:
            owed = self._channel(channel).owed_since
        if owed is None:
            return
        wait: float | None = None
        if time.time() - owed <= GIVE_UP_SECONDS:
            try:
                wait = pending(owed)
            except Exception:  # a storage hiccup: ask again after the next pass
                logger.debug("could not tell whether a wake was served", exc_info=True)
                wait = self.retry_seconds
        with self._condition:
            state = self._channels[channel]
            if wait is None:
                state.owed_since = None
            else:
                state.retry_at = time.monotonic() + max(wait, self.retry_seconds)

    def notify(self) -> None:
        """New work this process made (a run submitted): wake every loop."""
        with self._condition:
            self._generation += 1
            self._notified_at = time.time()
            self._condition.notify_all()

    def daemon_started(self, workspace_process_context) -> None:
        """Start each code location's warm run worker now, so the first run after the daemon starts does not wait
        for its import; fail the runs a crashed daemon left STARTING, so their cells are re-run now."""
        launcher = self.instance.run_launcher
        try:
            if hasattr(launcher, "fail_interrupted_launches"):
                for run_id in launcher.fail_interrupted_launches(self._started_at):
                    logger.warning("run %s was left STARTING by a daemon that stopped: failed", run_id)
        except Exception:  # run monitoring's start timeout still fails them
            logger.exception("could not fail the runs left STARTING")
        if not hasattr(launcher, "prewarm_origin"):
            return
        try:
            for origin in code_location_origins(workspace_process_context):
                launcher.prewarm_origin(origin)
        except Exception:  # an optimisation: the first launch starts the worker itself
            logger.exception("could not prewarm the run workers")

    def launch_cut_short(self, run_id: str) -> None:
        """The run queue's launch of ``run_id`` raised (its storage went away mid-launch)."""
        with self._condition:
            self._cut_short.add(run_id)

    def check_starting_runs(self) -> None:
        """After a run queue pass, at most every STARTING_CHECK_SECONDS: fail the STARTING runs that will never
        start (``WarmRunLauncher.fail_dead_starting_runs``) instead of waiting for the start timeout."""
        now = time.monotonic()
        if now - self._starting_checked_at < STARTING_CHECK_SECONDS:
            return
        self._starting_checked_at = now
        check = getattr(self.instance.run_launcher, "fail_dead_starting_runs", None)
        if check is None:
            return
        with self._condition:
            cut_short = set(self._cut_short)
        try:
            for run_id in check(cut_short):
                logger.warning("run %s will never start (its launch or its worker died): failed", run_id)
            with self._condition:
                self._cut_short -= cut_short
        except Exception:  # a storage hiccup: the next check, or run monitoring's start timeout, gets them
            logger.debug("could not check the STARTING runs", exc_info=True)

    # --- the poller -----------------------------------------------------------------------------------------------

    def start(self) -> Waker:
        global _current
        _current = self
        threading.Thread(target=self._poll_loop, name="backfill-assets-waker", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()

    def _poll_loop(self) -> None:
        while not self._stop.wait(self.poll_seconds):
            try:
                if self._changed():
                    self.notify()
            except Exception:  # a storage hiccup: the timers still run; try again next poll
                logger.debug("waker poll failed", exc_info=True)

    def _changed(self) -> bool:
        self._polls += 1
        stamp = wakeup_stamp(self.home)
        changed, self._stamp = stamp != self._stamp, stamp
        if self._polls % RUNS_EVERY_POLLS == 0:
            records = self.instance.get_run_records(
                dg.RunsFilter(statuses=FINISHED, updated_after=self._finished_after),
                limit=1,
                order_by="update_timestamp",
            )
            if records:
                self._finished_after = records[0].update_timestamp
                changed = True
        if self._polls % BACKFILLS_EVERY_POLLS == 0:
            backfills = self._active_backfills()
            changed, self._backfills = changed or backfills != self._backfills, backfills
        return changed

    def _active_backfills(self) -> int:
        return active_backfill_count(self.instance)
