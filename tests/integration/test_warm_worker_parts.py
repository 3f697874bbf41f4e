"""The warm launcher's small parts, without a daemon: the stale-code check, the run-worker tag and its liveness."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from backfill_assets.integration.runs.code_files import files_digest as fingerprint
from backfill_assets.integration.runs.warm_launcher import RunWorker, WarmRunLauncher
from backfill_assets.integration.runs.warm_worker import changed_file, source_files, start_ticks


def test_a_changed_or_removed_source_file_is_named_and_an_unchanged_one_is_not(tmp_path: Path):
    module = tmp_path / "location.py"
    module.write_text("MARK = 1\n")
    files = {str(module): (module.stat().st_mtime_ns, module.stat().st_size)}
    assert changed_file(files) is None
    module.write_text("MARK = 22\n")
    assert changed_file(files) == str(module)
    module.unlink()
    assert changed_file(files) == str(module)


def test_the_fingerprint_covers_this_project_and_not_the_interpreter():
    files = source_files()
    assert any(path.endswith("warm_worker.py") for path in files)  # the library itself (an editable install)
    assert not any(path.endswith(os.sep + "threading.py") for path in files)  # the standard library is not code
    assert fingerprint(files) == fingerprint(dict(reversed(list(files.items()))))


def test_a_run_worker_is_alive_only_while_that_very_process_runs():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        worker = RunWorker("here", child.pid, start_ticks(child.pid))
        assert worker.is_alive()
        # The same pid with another start time is another process (the pid was reused): not the run's.
        assert not RunWorker("here", child.pid, str(int(worker.start_ticks) + 1)).is_alive()
    finally:
        child.kill()
        child.wait()
    assert not worker.is_alive()


def test_the_run_worker_tag_round_trips_and_a_host_with_colons_survives():
    worker = RunWorker("host:with:colons", 4242, "987654")
    assert RunWorker.from_tags({"backfill/run_worker": worker.tag()}) == worker
    assert RunWorker.from_tags({}) is None


@pytest.mark.parametrize("field", ["startup_timeout_seconds", "fork_timeout_seconds"])
@pytest.mark.parametrize("timeout", [0, -5])
def test_a_non_positive_timeout_is_refused(field: str, timeout: float):
    with pytest.raises(ValueError, match=field):
        WarmRunLauncher.from_config_value(None, {field: timeout})


def test_the_timeouts_default_when_not_configured_and_are_kept_when_they_are():
    default = WarmRunLauncher.from_config_value(None, {})
    assert (default.startup_timeout_seconds, default.fork_timeout_seconds) == (60.0, 10.0)
    tuned = WarmRunLauncher.from_config_value(None, {"startup_timeout_seconds": 30, "fork_timeout_seconds": 2})
    assert (tuned.startup_timeout_seconds, tuned.fork_timeout_seconds) == (30.0, 2.0)
