"""Ctrl-C during an in-process run stops the command there (one line, exit 130), as it does anywhere else: Dagster
ends an interrupted ``execute_in_process`` run as failed and returns, so ``run_partitions`` went on to its next
partition (the demo, interrupted in its production days, ran all 91 and then said "production failed")."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from backfill_assets.engine.wap.faults import AFTER_DATA_FILE, ENV_HOLD
from backfill_assets.examples.orders.domain import RAW_ORDERS
from backfill_assets.interrupts import EXIT_INTERRUPTED
from tests.homes import HasStores, fresh_home

REPO = Path(__file__).resolve().parents[2]
DAYS = ["2022-09-01", "2022-09-02", "2022-09-03"]
CHILD = f"""
import sys
import dagster as dg
from backfill_assets.engine.model.settings import Settings
from backfill_assets.examples.orders.source import SourceSystem
from backfill_assets.interrupts import stopped_by_ctrl_c
from tests.orders import CALENDAR, run_chunk, run_partitions
SourceSystem(Settings.from_env().source_url).seed(CALENDAR, {DAYS[0]!r}, {DAYS[-1]!r}, 20)
with stopped_by_ctrl_c("probe"), dg.instance_for_test(temp_dir=sys.argv[1]) as instance:
    if sys.argv[2] == "partitions":
        run_partitions(instance, {DAYS!r}, assets=[{RAW_ORDERS!r}])
    else:
        run_chunk(instance, {{{RAW_ORDERS!r}: {DAYS!r}}})
    print("went on")
"""


class Home(HasStores):
    def __init__(self, settings):
        self.settings = settings


def _as_from_a_terminal() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # pytest-xdist's workers ignore SIGINT, and children inherit it


@pytest.mark.parametrize("runs", ["partitions", "chunk"])
def test_ctrl_c_in_a_run_stops_the_command_and_starts_no_further_run(tmp_path, monkeypatch, runs):
    home = Home(fresh_home(tmp_path / "home", monkeypatch))
    hold = tmp_path / "hold"
    hold.touch()  # the first day's step waits after writing its data file, until the interrupt
    env = {**os.environ, ENV_HOLD: f"{AFTER_DATA_FILE}={hold}", "PYTHONPATH": str(REPO)}
    # The instance's folder is the home: the runs read the source seeded there and write its catalog.
    child = subprocess.Popen([sys.executable, "-c", CHILD, str(home.settings.dagster_home), runs], cwd=REPO, env=env,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_as_from_a_terminal)
    try:
        deadline = time.monotonic() + 240
        while not Path(f"{hold}.held").exists():
            assert child.poll() is None and time.monotonic() < deadline, child.communicate()
            time.sleep(0.1)
        child.send_signal(signal.SIGINT)
        # Let go of the hold: the interrupt is handled before the step looks at the hold again, so only a step
        # tried again (or a later run) gets past it.
        hold.unlink()
        out, err = child.communicate(timeout=120)
    finally:
        hold.unlink(missing_ok=True)
        if child.poll() is None:
            child.kill()
            child.wait()
    assert child.returncode == EXIT_INTERRUPTED, err[-3000:]
    assert "went on" not in out
    assert err.strip().splitlines()[-1] == "probe: interrupted (Ctrl-C), stopped", err[-3000:]
    assert "Traceback" not in err, err[-3000:]
    versions = {day: home.catalog.versions_of(RAW_ORDERS, day) for day in DAYS}
    # The interrupted step's version is abandoned, and the step was not tried again (a retry, past the hold, would
    # have published the day) ...
    assert [v.state for v in versions[DAYS[0]]] == ["ABANDONED"], versions[DAYS[0]]
    # ... and no later run started.
    assert not versions[DAYS[1]] and not versions[DAYS[2]], "a day after the interrupt was run"
