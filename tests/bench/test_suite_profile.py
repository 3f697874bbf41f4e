"""``bench/suite_profile.py``: a py-spy recording of a whole suite (``--subprocesses -f raw``) read by kind of process,
waiting threads left out. The lines below are py-spy's own, cut from a recording of ``make test``'s first command."""

from __future__ import annotations

from bench.suite_profile import main, read

WORKER = ('process 16402:"";process 16412:"/work/main/.venv/bin/python -u -c '
          'import sys;exec(eval(sys.stdin.readline()))"')
CODE_SERVER = 'process 16402:"";process 20511:"/work/main/.venv/bin/python -m dagster api grpc --lazy-load-user-code"'
RAW = "\n".join([
    f"{WORKER};run_partitions (backfill_assets/integration/runs/local_runs.py:64);"
    "JobDefinition.execute_in_process (dagster/_core/definitions/job_definition.py:821) 30",
    f"{WORKER};Popen2IO.read (execnet/gateway_base.py:534) 500",
    f"{CODE_SERVER};<module> (pandas/__init__.py:49) 10",
    f"{CODE_SERVER};Thread.run (threading.py:982);Condition.wait (threading.py:331) 400",
    "",
])


def test_samples_are_counted_by_the_kind_of_their_process_and_waiting_threads_are_left_out(tmp_path, capsys):
    raw = tmp_path / "suite.folded"
    raw.write_text(RAW)
    profile = read(raw)
    assert (profile.total, profile.idle) == (40, 900)
    # The worker's command line holds ";": its kind still comes from the whole of it.
    assert dict(profile.by_kind) == {"pytest-xdist worker": 30, "code server": 10}
    assert profile.functions["run_partitions (backfill_assets/integration/runs/local_runs.py)"] == 30
    assert profile.functions_by_kind["code server"] == {"<module> (pandas/__init__.py)": 10}

    assert main([str(raw), "--kind", "code server", "--top", "5"]) == 0
    printed = capsys.readouterr().out
    assert "75.0 %  pytest-xdist worker" in printed and "25.0 %  code server" in printed
    assert "100.0 %  <module> (pandas/__init__.py)" in printed
