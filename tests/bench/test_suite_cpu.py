"""``bench/suite_cpu.py``: every process of a command counted by kind, and the machine's speed measured beside it
(``bench/yardstick.py``), also when run as a plain script in a fresh clone, before any virtualenv exists."""

from __future__ import annotations

import json
import subprocess
import sys

from bench.suite_cpu import kind_of, label_of
from bench.yardstick import yardstick_seconds
from tests.readme_blocks import ROOT

# Longer than two samples (0.5 s apart): a process that ends before it is sampled is not counted.
BURN = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.5: pass"


def test_the_yardstick_is_the_cpu_time_of_fixed_work_in_a_fresh_interpreter():
    assert 0.05 < yardstick_seconds(repetitions=1) < 30


def test_a_commands_processes_are_counted_with_the_machines_speed_beside_them(tmp_path):
    out = tmp_path / "figures.json"
    # As .ci/run's measurement runs it: the file as a script, the system's interpreter, outside the repository.
    command = ["python3", str(ROOT / "bench" / "suite_cpu.py"), "--out", str(out), "--yardstick-repetitions", "1",
               "--yardstick-every", "0.5", "--", sys.executable, "-c", BURN]
    done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    figures = json.loads(out.read_text())
    assert figures["exit_status"] == 0 and figures["cpu_s"] >= 0.5, figures
    # Every process of the machine is counted (a suite may be running beside this test): the burn is among them.
    assert figures["top_commands"].get("-c import time", 0) >= 0.5, figures["top_commands"]
    yardstick = figures["yardstick"]
    timed = [yardstick["before_s"], *yardstick["during_s"], yardstick["after_s"]]
    assert len(timed) >= 3 and yardstick["mean_s"] == round(sum(timed) / len(timed), 3)
    # Divided before cpu_s is rounded to a tenth: one unit either way.
    assert abs(figures["cpu_in_yardsticks"] - figures["cpu_s"] / yardstick["mean_s"]) <= 1


def test_processes_are_told_apart_by_their_command_lines():
    assert kind_of("/v/bin/python /v/bin/dagster api grpc --lazy-load-user-code") == "code server"
    assert kind_of("/v/bin/python /v/bin/backfill-assets-daemon run -w workspace.yaml") == "daemon"
    assert kind_of("/usr/bin/python3 -c print(1)") == "python, other"


def test_a_command_is_labelled_by_its_first_words_without_the_interpreter_or_paths():
    assert label_of("/v/bin/python -u /v/bin/backfill-assets request show req-1 --json") == (
        "backfill-assets request show")
    assert label_of("/usr/bin/bash -c make test") == "bash -c make"
