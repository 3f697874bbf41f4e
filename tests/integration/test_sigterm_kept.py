"""A process started with Ctrl-C ignored (a background job of a script: ``backfill-assets demo &``) can still be
stopped by ``kill`` after it ran partitions in-process: Dagster gives SIGTERM SIGINT's handler each time it puts its
own back after a run, which made SIGTERM ignored too (``interrupts.sigterm_kept``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from backfill_assets.examples.orders.domain import RAW_ORDERS

REPO = Path(__file__).resolve().parents[2]
CHILD = f"""
import json, signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)  # as a shell starts a script's background job
import dagster as dg
from backfill_assets.engine.model.settings import Settings
from backfill_assets.examples.orders.source import SourceSystem
from tests.orders import CALENDAR, run_chunk, run_partitions
SourceSystem(Settings.from_env().source_url).seed(CALENDAR, "2022-09-01", "2022-09-02", 20)
with dg.instance_for_test(temp_dir=sys.argv[1]) as instance:
    published = [run_partitions(instance, ["2022-09-01"], assets=[{RAW_ORDERS!r}])[0].success]
    default = [signal.getsignal(signal.SIGTERM) is signal.SIG_DFL]
    published.append(run_chunk(instance, {{{RAW_ORDERS!r}: ["2022-09-02"]}}).success)
    default.append(signal.getsignal(signal.SIGTERM) is signal.SIG_DFL)
print(json.dumps([published, default]))
"""


def test_sigterm_still_stops_a_process_that_ignores_ctrl_c_after_its_in_process_runs(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("BACKFILL_", "DAGSTER_"))}
    env.update({"DAGSTER_HOME": str(home), "BACKFILL_CODE_VERSION": "test-code-1", "PYTHONPATH": str(REPO)})
    done = subprocess.run([sys.executable, "-c", CHILD, str(home)], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    published, default = json.loads(done.stdout.strip().splitlines()[-1])
    assert published == [True, True]
    assert default == [True, True], "SIGTERM left ignored after an in-process run"
