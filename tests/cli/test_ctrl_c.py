"""Ctrl-C (SIGINT) stops ``backfill-assets-daemon`` and ``backfill-assets demo`` with one line on stderr and exit
status 130, never a traceback, whether it arrives while Python imports, while Dagster's daemon runs its loops
(Dagster's own handler takes it) or in the middle of the demo; SIGTERM still stops the daemon cleanly (exit 0)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

import psutil
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.cli.daemon import dagster_bin
from backfill_assets.interrupts import EXIT_INTERRUPTED


def _project(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "shop"
    assert CliRunner().invoke(cli, ["init", str(folder)], catch_exceptions=False).exit_code == 0
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKFILL_")}
    env.update(DAGSTER_HOME=str(folder / ".dagster_home"), PYTHONPATH=str(folder))
    return folder, env


def _as_from_a_terminal() -> None:
    """A command started from a shell takes Ctrl-C; pytest-xdist's workers ignore SIGINT, and a child inherits an
    ignored signal (so under `make test -n 3` the commands ignored every interrupt and ran on)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupt(args: list[str], cwd: Path, env: dict[str, str], tmp_path: Path,
               when: str | None, sig: int = signal.SIGINT, group: bool = True,
               before_signal: Callable[[subprocess.Popen], None] = lambda proc: None) -> tuple[int, str]:
    """Start the command, send ``sig`` once ``when`` appears in its output (None: as soon as it started), right
    after ``before_signal(proc)``."""
    out = tmp_path / f"out-{time.monotonic_ns()}.log"
    with out.open("wb") as sink:
        proc = subprocess.Popen(args, cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT,
                                start_new_session=True, preexec_fn=_as_from_a_terminal)
    try:
        deadline = time.monotonic() + 180
        while when is not None and when not in out.read_text(errors="replace"):
            assert proc.poll() is None and time.monotonic() < deadline, out.read_text(errors="replace")[-3000:]
            time.sleep(0.2)
        if when is None:
            time.sleep(0.3)  # inside its imports
        before_signal(proc)
        # What a terminal's Ctrl-C does: the signal to the whole foreground process group (the daemon's warm run
        # worker and its spare run worker included).
        os.killpg(proc.pid, sig) if group else proc.send_signal(sig)
        code = proc.wait(timeout=150)  # the demo stops its daemon first, whose threads each get 30 s
        time.sleep(0.5)  # what the group's other processes still write
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return code, out.read_text(errors="replace")


def _assert_stopped_by_ctrl_c(code: int, output: str, command: str) -> None:
    assert code == EXIT_INTERRUPTED, output[-3000:]
    assert "Traceback" not in output and "KeyboardInterrupt" not in output, output[-3000:]
    assert output.strip().splitlines()[-1] == f"{command}: interrupted (Ctrl-C), stopped", output[-3000:]


def _code_servers_outside_group(daemon: subprocess.Popen) -> list[psutil.Process]:
    """The daemon's code servers, each asserted to be outside the daemon's process group. A terminal's Ctrl-C
    reaches its whole foreground group: a code server in it stopped at once, and the sensor call the daemon made in
    the next instant failed, logged with its traceback (``DagsterUserCodeUnreachableError``) before the daemon's
    threads shut down. The daemon stops its code servers itself."""
    servers = [child for child in psutil.Process(daemon.pid).children(recursive=True)
               if "grpc" in " ".join(child.cmdline())]
    assert servers, "the daemon started no code server"
    assert all(os.getpgid(server.pid) != os.getpgid(daemon.pid) for server in servers)
    return servers


def test_ctrl_c_stops_the_daemon_cleanly_running_or_importing(tmp_path):
    folder, env = _project(tmp_path)
    daemon = [dagster_bin("backfill-assets-daemon"), "run", "-m", "shop.definitions"]
    code_servers: list[psutil.Process] = []
    code, output = _interrupt(daemon, folder, env, tmp_path, when="Checking for new runs for sensor",
                              before_signal=lambda proc: code_servers.extend(_code_servers_outside_group(proc)))
    # Running, Dagster's daemon takes the interrupt: its threads stop, it says so, exit 0 (as dagster-daemon).
    assert code == 0 and "Traceback" not in output and "KeyboardInterrupt" not in output, output[-3000:]
    assert output.strip().splitlines()[-1].endswith("Daemon threads shut down."), output[-3000:]
    # ... and stops the code servers the interrupt did not reach (their shutdown call), none left behind.
    _, alive = psutil.wait_procs(code_servers, timeout=60)
    assert not alive, alive
    code, output = _interrupt(daemon, folder, env, tmp_path, when=None)  # while it imports Dagster
    _assert_stopped_by_ctrl_c(code, output, "backfill-assets-daemon")
    code, output = _interrupt(daemon, folder, env, tmp_path, when="Checking for new runs for sensor",
                              sig=signal.SIGTERM, group=False)
    assert code == 0 and "interrupted" not in output and "Traceback" not in output, output[-3000:]


def test_ctrl_c_stops_the_demo_with_one_line_and_exit_130(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKFILL_")}
    env["DAGSTER_HOME"] = str(tmp_path / "home")
    code, output = _interrupt([dagster_bin("backfill-assets"), "demo"], tmp_path, env, tmp_path,
                              when="1. seeded the source system")
    _assert_stopped_by_ctrl_c(code, output, "backfill-assets")


PROBE = '''
import os, signal, time, weakref
from backfill_assets.interrupts import stopped_by_ctrl_c

class Thing:
    pass

def callback(ref):  # a weakref callback, as SQLAlchemy's: Python drops what is raised inside one
    os.kill(os.getpid(), signal.SIGINT)
    sum(range(100000))  # the handler runs here, inside the callback

with stopped_by_ctrl_c("probe"):
    thing = Thing()
    ref = weakref.ref(thing, callback)
    del thing
    for _ in range(1000):  # 10 s: the interrupt delivered again stops it long before, even on a loaded machine
        time.sleep(0.01)
    print("ran to the end")
'''


def test_an_interrupt_python_drops_inside_a_gc_callback_still_stops_the_command(tmp_path):
    """Under load the demo's Ctrl-C once landed in a SQLAlchemy weakref callback: Python printed it as ignored
    and the demo ran to its end with exit 0."""
    probe = tmp_path / "probe.py"
    probe.write_text(PROBE)
    done = subprocess.run([sys.executable, str(probe)], capture_output=True, text=True, timeout=60,
                          preexec_fn=_as_from_a_terminal)
    assert done.returncode == EXIT_INTERRUPTED, done.stdout + done.stderr
    assert "ran to the end" not in done.stdout and "Traceback" not in done.stderr, done.stdout + done.stderr
    assert done.stderr.strip() == "probe: interrupted (Ctrl-C), stopped"


# An interrupt arriving while SQLAlchemy returns a connection to its pool (its ``reset`` event, where the demo was
# once interrupted under load): SQLAlchemy logs "Exception during reset or similar" with the traceback, then raises
# the interrupt on.
INTERRUPTED_IN_POOL_RESET = """
import logging, os, signal, sys, time
import sqlalchemy as sa
from backfill_assets.interrupts import stopped_by_ctrl_c

engine = sa.create_engine("sqlite://")

@sa.event.listens_for(engine, "reset")
def interrupted_here(dbapi_connection, record, reset_state):
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(5)

with stopped_by_ctrl_c("probe"):
    if sys.argv[1] == "error":
        logging.getLogger("probe").error("a real error", exc_info=ValueError("kept"))
    with engine.connect() as conn:
        conn.execute(sa.text("select 1"))
"""


def test_an_interrupt_a_library_logs_on_its_way_out_prints_no_traceback():
    def probe(mode: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-c", INTERRUPTED_IN_POOL_RESET, mode], capture_output=True,
                              text=True, timeout=60, preexec_fn=_as_from_a_terminal)

    quiet = probe("interrupt")
    assert (quiet.returncode, quiet.stderr) == (EXIT_INTERRUPTED, "probe: interrupted (Ctrl-C), stopped\n")
    # Any other record is logged as before, traceback and all.
    loud = probe("error")
    assert loud.returncode == EXIT_INTERRUPTED
    assert "a real error" in loud.stderr and "ValueError: kept" in loud.stderr
    assert "Exception during reset" not in loud.stderr
