"""The product's console scripts set the garbage collector for processes that import Dagster
(``backfill_assets/process_gc.py``): a higher young-generation threshold while they import, then what they imported
frozen and CPython's default threshold back before they work; and Dagster's code server, which the product does
not start, has what it holds collected and frozen when the driver sensor is first evaluated in it. (The warm
worker's forked runs are checked in tests/e2e/test_warm_launcher.py.)"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

from backfill_assets.process_gc import DEFAULT_YOUNG_GENERATION_THRESHOLD

# Reports the collector's state when the command exits (click ends every command with SystemExit).
PROBE = (
    "import atexit, gc, sys\n"
    "atexit.register(lambda: print('gc', gc.get_threshold()[0], gc.get_freeze_count()))\n"
    "sys.argv = {argv!r}\n"
    "from backfill_assets.entry_points import {function}\n"
    "{function}()\n"
)


def _collector_at_exit(function: str, argv: list[str]) -> tuple[int, int]:
    done = subprocess.run([sys.executable, "-c", PROBE.format(function=function, argv=argv)],
                          capture_output=True, text=True, timeout=120, check=False)
    [line] = [line for line in done.stdout.splitlines() if line.startswith("gc ")]
    _, young, frozen = line.split()
    return int(young), int(frozen)


def test_the_console_scripts_are_the_entry_points_that_set_the_collector():
    scripts = {e.name: e.value for e in entry_points(group="console_scripts") if e.name.startswith("backfill-assets")}
    assert scripts == {
        "backfill-assets": "backfill_assets.entry_points:backfill_assets",
        "backfill-assets-daemon": "backfill_assets.entry_points:backfill_assets_daemon",
    }


@pytest.mark.parametrize(
    ("function", "argv"),
    [
        ("backfill_assets", ["backfill-assets", "--help"]),
        # `run` hands its arguments to dagster-daemon run, whose --help exits once the daemon's modules are in.
        ("backfill_assets_daemon", ["backfill-assets-daemon", "run", "--help"]),
    ],
)
def test_a_console_script_freezes_what_it_imported_and_works_at_the_default_pace(function: str, argv: list[str]):
    young, frozen = _collector_at_exit(function, argv)
    # What it imported (the CLI's start: SQLAlchemy, click, rich; the daemon's: Dagster), never walked again by a
    # full collection. The CLI imports Dagster and pandas only in the commands that need them.
    assert frozen > 50_000
    assert young == DEFAULT_YOUNG_GENERATION_THRESHOLD  # cyclic garbage (an open transaction's) is freed promptly


def test_the_higher_threshold_lasts_only_until_the_freeze():
    from backfill_assets.process_gc import YOUNG_GENERATION_THRESHOLD, collect_less_often, freeze_long_lived_objects

    before = gc.get_threshold()
    try:
        collect_less_often()
        assert gc.get_threshold()[0] == YOUNG_GENERATION_THRESHOLD
        freeze_long_lived_objects()
        assert gc.get_threshold() == (DEFAULT_YOUNG_GENERATION_THRESHOLD, *before[1:])
    finally:
        gc.set_threshold(*before)


# Evaluates the driver sensor twice in a fresh process, as Dagster's code server does, on an empty home.
SENSOR_PROBE = """
import gc, sys
import dagster as dg
from backfill_assets.examples.orders.definitions import defs
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.sensors.driver import DRIVER_SENSOR

print("gc", gc.get_freeze_count(), gc.get_threshold()[0])
sensor = defs.resolve_sensor_def(DRIVER_SENSOR)
with dg.instance_for_test(temp_dir=sys.argv[1]) as instance:
    for _ in range(2):
        list(sensor(dg.build_sensor_context(instance=instance, resources={"backfill": BackfillResource()})))
        print("gc", gc.get_freeze_count(), gc.get_threshold()[0])
"""


def test_the_driver_sensor_freezes_the_code_servers_objects_once_and_leaves_its_thresholds(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BACKFILL_")}
    done = subprocess.run([sys.executable, "-c", SENSOR_PROBE, str(home)], env={**env, "DAGSTER_HOME": str(home)},
                          capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    (before, young), (first, young_first), (second, young_second) = [
        tuple(int(x) for x in line.split()[1:]) for line in done.stdout.splitlines() if line.startswith("gc ")]
    assert before == 0 and young == young_first == young_second  # the process owner's thresholds, untouched
    assert first > 100_000  # Dagster and the code location: out of every later full collection's walk
    assert second == first  # once per process: a later tick's objects are left to the collector
