"""The run launcher of the product's ``dagster.yaml``: runs start by forking a warm process, not spawning Python.

Configured like ``DefaultRunLauncher``::

    run_launcher:
      module: backfill_assets.integration.runs.warm_launcher
      class: WarmRunLauncher
      config:
        startup_timeout_seconds: 60   # optional

Dagster's ``DefaultRunLauncher`` asks the code server to spawn a new interpreter per run, which imports Dagster
and the code location before the first step (a median 4.3 s per run on a 2-core machine, against 2.5 s of work).
This launcher keeps one warm worker per code location (``warm_worker.py``: Dagster and the code location
imported, nothing opened) and forks it per run; the child runs ``dagster api execute_run``'s own body. Every
promise of the default launcher is kept:

- runs, logs and events are Dagster's own (the child *is* a run worker);
- ``terminate`` (the UI's Terminate, ``request cancel``) sends SIGTERM to the run's process, which Dagster's run
  worker turns into an interrupt: the run ends CANCELED;
- run monitoring asks ``check_run_worker_health``: a run whose process died (SIGKILL, OOM) is marked failed;
- stale code never runs: the worker checks every source file it imported before each fork and is replaced when
  one changed (a code location reload after an edit, a new code version);
- nothing is shared across the fork: the worker is not the daemon and holds no connection, channel or thread;
- if the warm worker cannot start or answer, the run is launched by ``DefaultRunLauncher`` and its log says why.

The run's process is named by the tag ``backfill/run_worker`` = ``host:pid:start_ticks`` (start ticks tell a
reused pid apart). Runs launched by the fallback are terminated and monitored as the default launcher does.
"""

from __future__ import annotations

import json
import logging
import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections import OrderedDict
from typing import AbstractSet, Any, Mapping

import dagster as dg

from backfill_assets.engine.model import tags as T
from backfill_assets.integration.runs.dagster_adapter import execute_run_args, worker_health
from backfill_assets.integration.runs.forked_runs import (
    FALLBACK_MESSAGE_START,
    RunWorker,
    fail_dead_starting_runs,
    fail_interrupted_launches,
)

WORKER_MODULE = "backfill_assets.integration.runs.warm_worker"
# The worker shares the daemon's process group, which a terminal's Ctrl-C reaches whole; it is started with SIGINT
# ignored (inherited through exec, so even the interpreter's own start-up cannot be interrupted: an interrupt there
# was a traceback in the daemon's log). The worker ends when its stdin closes; its runs take Ctrl-C again.
WORKER_COMMAND = 'trap "" INT; exec "$0" -m "$1"'
STARTUP_TIMEOUT_FIELD = "startup_timeout_seconds"
DEFAULT_STARTUP_TIMEOUT_SECONDS = 60.0
FORK_TIMEOUT_FIELD = "fork_timeout_seconds"
# A fork answers in milliseconds; longer means the worker is wedged, and the run is better off on the fallback.
DEFAULT_FORK_TIMEOUT_SECONDS = 10.0
# Code locations kept warm at once (one worker each, about one interpreter's memory); the least recently used goes.
MAX_WARM_WORKERS = 4
# How long a terminate waits for a just-forked run to write RUN_START (a fraction of a second), and how often it looks.
STARTED_WAIT_SECONDS = 3.0
STARTED_POLL_SECONDS = 0.05
# Forked runs whose worker the launcher remembers (a run is STARTING for a fraction of a second after its fork).
FORKS_REMEMBERED = 256

logger = logging.getLogger("backfill_assets.warm_launcher")


class WarmWorkerUnavailable(Exception):
    """The warm worker could not start, answer or fork; the run goes to the default launcher."""


# pyarrow's bundled jemalloc starts a background thread when it loads: the worker would then fork with two threads,
# which Python 3.12+ reports as a DeprecationWarning (fork() of a multi-threaded process may deadlock its child) in
# the daemon's log on every run. Without it the worker runs one thread, as forking needs.
ARROW_JEMALLOC_CONF = "JE_ARROW_MALLOC_CONF"
SINGLE_THREADED_JEMALLOC = "background_thread:false"


def worker_environment(environ: Mapping[str, str]) -> dict[str, str]:
    """The warm worker's environment: the daemon's, with pyarrow's jemalloc kept to the calling thread (a setting
    of the user's own is kept as given)."""
    return {**environ, ARROW_JEMALLOC_CONF: environ.get(ARROW_JEMALLOC_CONF) or SINGLE_THREADED_JEMALLOC}


class WarmWorker:
    """One warm worker process and its pipe; every call is made under the launcher's lock."""

    def __init__(self, repository_origin: Any, instance_ref_json: str):
        executable = repository_origin.executable_path
        working_directory = getattr(repository_origin.code_pointer, "working_directory", None)
        self.process = subprocess.Popen(
            ["/bin/sh", "-c", WORKER_COMMAND, executable, WORKER_MODULE],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # Same process group as the daemon, as the code server and its run workers are: whoever stops the
            # daemon's group stops the worker and its runs too. The worker itself ends when its stdin closes.
            cwd=working_directory or None,
            env=worker_environment(os.environ),
        )
        self.ready: dict[str, Any] | None = None
        self.wedged = False  # it did not answer in time: it will not exit when asked either
        self._send({"origin": dg.serialize_value(repository_origin), "instance_ref": instance_ref_json})

    def _send(self, message: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        self.process.stdin.write((json.dumps(message) + "\n").encode())
        self.process.stdin.flush()

    def _receive(self, timeout: float) -> dict[str, Any]:
        assert self.process.stdout is not None
        readable, _, _ = select.select([self.process.stdout], [], [], timeout)
        if not readable:
            self.wedged = True
            raise WarmWorkerUnavailable(f"warm worker (pid {self.process.pid}) did not answer in {timeout:.0f} s")
        line = self.process.stdout.readline()
        if not line:
            raise WarmWorkerUnavailable(f"warm worker (pid {self.process.pid}) exited ({self.process.poll()})")
        return json.loads(line)

    def wait_ready(self, timeout: float) -> dict[str, Any]:
        if self.ready is None:
            answer = self._receive(timeout)
            if not answer.get("ready"):
                raise WarmWorkerUnavailable(f"warm worker could not load the code location: {answer.get('error')}")
            self.ready = answer
        return self.ready

    def ask(self, message: dict[str, Any], timeout: float) -> dict[str, Any]:
        try:
            self._send(message)
        except (BrokenPipeError, OSError) as error:
            raise WarmWorkerUnavailable(f"warm worker (pid {self.process.pid}) is gone: {error}") from error
        return self._receive(timeout)

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        """Close its stdin: the worker exits; runs it forked go on (orphans are reaped by the system). A wedged
        worker is killed at once: the run that found it so is waiting for the fallback launcher."""
        if self.wedged:
            self.process.kill()
            self.process.wait(timeout=5)
            return
        try:
            if self.process.stdin:
                self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:  # wedged (or stopped): SIGKILL works on both
            self.process.kill()
            self.process.wait(timeout=5)


class WarmRunLauncher(dg.DefaultRunLauncher):
    """Launches each run by forking a warm worker of its code location; falls back to ``DefaultRunLauncher``."""

    def __init__(
        self,
        inst_data=None,
        startup_timeout_seconds: float = DEFAULT_STARTUP_TIMEOUT_SECONDS,
        fork_timeout_seconds: float = DEFAULT_FORK_TIMEOUT_SECONDS,
    ):
        super().__init__(inst_data=inst_data)
        self.startup_timeout_seconds = float(startup_timeout_seconds)
        self.fork_timeout_seconds = float(fork_timeout_seconds)
        self._workers: OrderedDict[str, WarmWorker] = OrderedDict()
        # The runs this launcher forked, newest last: their worker is known even if its tag could not be written.
        self._forked: OrderedDict[str, RunWorker] = OrderedDict()
        self._lock = threading.Lock()

    @classmethod
    def config_type(cls):
        return {
            STARTUP_TIMEOUT_FIELD: dg.Field(
                float,
                is_required=False,
                default_value=DEFAULT_STARTUP_TIMEOUT_SECONDS,
                description="Seconds a new warm worker may take to import the code location before the run "
                "waiting for it goes to the default launcher.",
            ),
            FORK_TIMEOUT_FIELD: dg.Field(
                float,
                is_required=False,
                default_value=DEFAULT_FORK_TIMEOUT_SECONDS,
                description="Seconds a ready warm worker may take to fork a run (it answers in milliseconds) "
                "before it is taken for wedged, replaced, and the run goes to the default launcher.",
            ),
        }

    @classmethod
    def from_config_value(cls, inst_data, config_value: Mapping[str, Any]):
        timeouts = {
            field: float(config_value.get(field, default))
            for field, default in (
                (STARTUP_TIMEOUT_FIELD, DEFAULT_STARTUP_TIMEOUT_SECONDS),
                (FORK_TIMEOUT_FIELD, DEFAULT_FORK_TIMEOUT_SECONDS),
            )
        }
        for field, timeout in timeouts.items():
            if timeout <= 0:
                raise ValueError(f"run_launcher {field}: {timeout} must be positive")
        return cls(inst_data=inst_data, **timeouts)

    # --- warm workers -----------------------------------------------------------------------------------------

    def _worker(self, repository_origin: Any) -> WarmWorker:
        """The live worker of a code location, started if missing (caller holds the lock)."""
        key = dg.serialize_value(repository_origin)
        worker = self._workers.get(key)
        if worker is not None and not worker.alive():
            del self._workers[key]
            worker = None
        if worker is None:
            try:
                worker = WarmWorker(repository_origin, dg.serialize_value(self._instance.get_ref()))
            except (OSError, ValueError) as error:
                raise WarmWorkerUnavailable(f"could not start a warm worker: {error}") from error
            self._workers[key] = worker
            while len(self._workers) > MAX_WARM_WORKERS:
                _, oldest = self._workers.popitem(last=False)
                oldest.close()
        self._workers.move_to_end(key)
        return worker

    def _drop(self, worker: WarmWorker) -> None:
        for key, known in list(self._workers.items()):
            if known is worker:
                del self._workers[key]
        worker.close()

    def prewarm(self, run: dg.DagsterRun) -> None:
        """Start the warm worker of ``run``'s code location now, without waiting for it (a run was just queued:
        by the time the queue launches it, the import is done or under way)."""
        origin = run.job_code_origin
        if origin is not None:
            self.prewarm_origin(origin.repository_origin)

    def prewarm_origin(self, repository_origin: Any) -> None:
        """Start the warm worker of a code location (a ``RepositoryPythonOrigin``) now, without waiting for it:
        ``backfill-assets-daemon`` does it when it starts, so even its first runs fork at once."""
        with self._lock:
            try:
                self._worker(repository_origin)
            except WarmWorkerUnavailable as error:
                logger.warning("prewarm: %s", error)

    def _fork(self, run: dg.DagsterRun) -> tuple[RunWorker, dict[str, Any], float]:
        origin = run.job_code_origin
        if origin is None:
            raise WarmWorkerUnavailable("the run has no code origin")
        args = execute_run_args(run, self._instance)
        instance_ref = dg.serialize_value(self._instance.get_ref())
        with self._lock:
            for _ in range(2):  # a stale worker is replaced once
                worker = self._worker(origin.repository_origin)
                waited = time.monotonic()
                try:
                    ready = worker.wait_ready(self.startup_timeout_seconds)
                    waited = time.monotonic() - waited
                    answer = worker.ask(
                        {"op": "run", "run_id": run.run_id, "execute_run_args": args, "instance_ref": instance_ref,
                         "home": self._instance.root_directory},
                        self.fork_timeout_seconds,
                    )
                except WarmWorkerUnavailable:
                    self._drop(worker)
                    raise
                if "stale" in answer:
                    logger.info("warm worker replaced: %s", answer["stale"])
                    self._drop(worker)
                    continue
                if "pid" not in answer:
                    self._drop(worker)
                    raise WarmWorkerUnavailable(f"warm worker answered {answer}")
                run_worker = RunWorker(socket.gethostname(), int(answer["pid"]), str(answer.get("start_ticks", "")))
                self._forked[run.run_id] = run_worker
                while len(self._forked) > FORKS_REMEMBERED:
                    self._forked.popitem(last=False)
                return run_worker, ready, waited
        raise WarmWorkerUnavailable("the code location changed twice while starting its warm worker")

    # --- after a crash or an outage (forked_runs.py) ----------------------------------------------------------

    def fail_interrupted_launches(self, daemon_started_at: float) -> list[str]:
        """``forked_runs.fail_interrupted_launches``: called by ``backfill-assets-daemon`` when it starts."""
        return fail_interrupted_launches(self._instance, daemon_started_at)

    def fail_dead_starting_runs(self, cut_short: AbstractSet[str] = frozenset()) -> list[str]:
        """``forked_runs.fail_dead_starting_runs``: called by ``backfill-assets-daemon`` every few seconds."""
        return fail_dead_starting_runs(self._instance, self._forked, cut_short)

    # --- RunLauncher --------------------------------------------------------------------------------------------

    def launch_run(self, context) -> None:
        run = context.dagster_run
        started = time.monotonic()
        try:
            run_worker, ready, waited = self._fork(run)
        except WarmWorkerUnavailable as error:
            self._instance.report_engine_event(
                f"{FALLBACK_MESSAGE_START} ({error}); launching with Dagster's default run launcher "
                "(a new process, which imports Dagster and the code location).",
                run,
                cls=self.__class__,
            )
            super().launch_run(context)
            return
        self._instance.add_run_tags(run.run_id, {T.RUN_WORKER: run_worker.tag()})
        self._run_ids.add(run.run_id)
        self._instance.report_engine_event(
            f"Forked run worker pid {run_worker.pid} from the warm worker (pid {ready['pid']}, code fingerprint "
            f"{ready['fingerprint']}) in {time.monotonic() - started:.3f} s"
            + (f", {waited:.1f} s of it waiting for the worker to import the code location" if waited > 0.5 else ""),
            run,
            cls=self.__class__,
        )

    def terminate(self, run_id: str) -> bool:
        if not self.has_instance:
            return False
        run = self._instance.get_run_by_id(run_id)
        if not run or run.is_finished:
            return False
        run_worker = RunWorker.from_tags(run.tags)
        if run_worker is None:  # launched by the fallback: the code server owns its process
            return super().terminate(run_id)
        run = self._past_starting(run)
        if run.is_finished:
            return False
        self._instance.report_run_canceling(run)
        if not run_worker.is_local():
            self._instance.report_engine_event(
                f"Cannot terminate: the run's process runs on host {run_worker.host}, not here.",
                run,
                cls=self.__class__,
            )
            return False
        if not run_worker.is_alive():
            self._instance.report_run_canceled(run, f"The run's process (pid {run_worker.pid}) had already exited.")
            return True
        os.kill(run_worker.pid, signal.SIGTERM)  # the run worker turns SIGTERM into an interrupt: run CANCELED
        return True

    def _past_starting(self, run: dg.DagsterRun) -> dg.DagsterRun:
        """The run once its worker has said it started (at most ``STARTED_WAIT_SECONDS``). A forked worker writes
        RUN_START a fraction of a second after the fork, and that event sets the run STARTED whatever its status:
        a CANCELING written before it is lost, and the interrupt that follows ends the run FAILURE ("no user
        initiated termination request was found") instead of CANCELED."""
        deadline = time.monotonic() + STARTED_WAIT_SECONDS
        while run.status == dg.DagsterRunStatus.STARTING and time.monotonic() < deadline:
            time.sleep(STARTED_POLL_SECONDS)
            run = self._instance.get_run_by_id(run.run_id) or run
        return run

    @property
    def supports_check_run_worker_health(self) -> bool:
        return True

    def check_run_worker_health(self, run: dg.DagsterRun):
        run_worker = RunWorker.from_tags(run.tags)
        if run_worker is None or not run_worker.is_local():
            # Launched by the fallback, or elsewhere: not ours to judge (the default launcher does not either).
            return worker_health(True, "not launched from a warm worker on this host")
        if run_worker.is_alive():
            return worker_health(True)
        return worker_health(False, f"run worker process {run_worker.pid} exited without finishing the run")

    def get_run_worker_debug_info(self, run: dg.DagsterRun, include_container_logs: bool | None = True) -> str | None:
        run_worker = RunWorker.from_tags(run.tags)
        return None if run_worker is None else f"run worker: host {run_worker.host}, pid {run_worker.pid}"

    def dispose(self) -> None:
        with self._lock:
            for worker in self._workers.values():
                worker.close()
            self._workers.clear()
