"""backfill-assets-daemon reloads its workspace when the code changed: a real Dagster daemon controller and its code
server, the minute check driven directly (integration/runs/dagster_adapter/workspace_reload.py), and the code-file
fingerprint it rests on (integration/runs/code_files.py)."""

from __future__ import annotations

import importlib.abc
import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import dagster as dg
import pytest
from dagster._core.workspace.load_target import PythonFileTarget
from dagster._daemon.controller import RELOAD_WORKSPACE_INTERVAL, daemon_controller_from_instance
from dagster._daemon.daemon import IntervalDaemon

from backfill_assets.integration.runs.code_files import CodeTarget, code_roots, fingerprint
from backfill_assets.integration.runs.dagster_adapter.workspace_reload import (
    ReloadState,
    install_reload_on_change,
    reload_reason,
)

DEFS = "import dagster as dg\n\n\n@dg.asset\ndef one():\n    return 1\n\n\ndefs = dg.Definitions(assets=[one])\n"


class IdleDaemon(IntervalDaemon):
    """A controller needs one daemon; this one does nothing for an hour."""

    @classmethod
    def daemon_type(cls) -> str:
        return "IDLE"

    def run_iteration(self, workspace_process_context):
        yield


def _project(tmp_path: Path) -> Path:
    code = tmp_path / "project"
    (code / "helpers").mkdir(parents=True)
    (code / "defs.py").write_text(DEFS)
    (code / "helpers" / "__init__.py").write_text("")
    return code


def _server_pid(controller) -> int:
    return _server_process(controller).pid


def _minute_check(controller) -> float:
    stale = time.time() - RELOAD_WORKSPACE_INTERVAL - 1
    updated = controller.check_workspace_freshness(stale)
    assert updated > stale
    return updated


def test_the_code_server_is_kept_while_nothing_changed_and_replaced_after_an_edit_or_its_death(tmp_path):
    code = _project(tmp_path)
    target = PythonFileTarget(python_file=str(code / "defs.py"), attribute=None, working_directory=str(code),
                              location_name="project")
    idle = [IdleDaemon(interval_seconds=3600)]
    with dg.instance_for_test() as instance:
        with daemon_controller_from_instance(instance, target, gen_daemons=lambda _: idle) as controller:
            install_reload_on_change(controller, reload_seconds=600.0)
            first = _server_pid(controller)
            _minute_check(controller)
            _minute_check(controller)
            assert _server_pid(controller) == first  # Dagster's controller would have started two servers

            (code / "helpers" / "__init__.py").write_text("LIMIT = 3\n")
            _minute_check(controller)
            edited = _server_pid(controller)
            assert edited != first
            _minute_check(controller)
            assert _server_pid(controller) == edited

            os.kill(edited, 9)
            deadline = time.monotonic() + 30
            while _server_process(controller).poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            _minute_check(controller)
            assert _server_pid(controller) != edited
            assert controller._workspace_process_context.create_request_context().get_code_location_entries()[
                "project"].load_error is None


def _server_process(controller):
    (entry,) = controller._grpc_server_registry._active_entries.values()
    return entry.process.server_process


def test_the_reload_after_reload_seconds_and_for_an_unwatchable_location():
    class NoBrokenLocations:  # the controller's parts reload_reason reads, none of them broken
        class _workspace_process_context:  # noqa: N801 - the attribute's own name
            @staticmethod
            def create_request_context():
                return type("Context", (), {"get_code_location_entries": staticmethod(lambda: {})})()

        _grpc_server_registry = None

    watched = ("origin", "12:abc")
    assert reload_reason(NoBrokenLocations, ReloadState(watched), watched, 600.0) is None
    assert reload_reason(NoBrokenLocations, ReloadState(watched), ("origin", "13:def"), 600.0) == (
        "a code location's files changed")
    old = ReloadState(watched, reloaded_at=time.monotonic() - 601)
    assert reload_reason(NoBrokenLocations, old, watched, 600.0) == "600 s since the last reload"
    unwatchable = ("origin", None)
    assert "every minute" in reload_reason(NoBrokenLocations, ReloadState(unwatchable), unwatchable, 600.0)


def test_the_fingerprint_moves_with_code_files_only(tmp_path):
    code = _project(tmp_path)
    roots = code_roots(CodeTarget(python_file=str(code / "defs.py"), working_directory=str(code)))
    assert roots == [code.resolve()]
    before = fingerprint(roots)
    (code / "data").mkdir()
    (code / "data" / "day.parquet").write_bytes(b"PAR1")
    (code / "__pycache__").mkdir()
    (code / "__pycache__" / "defs.cpython-311.pyc").write_bytes(b"\0")
    (code / ".venv").mkdir()
    (code / ".venv" / "lib.py").write_text("x = 1\n")
    venv = code / "env"
    venv.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr\n")
    (venv / "site.py").write_text("x = 1\n")
    assert fingerprint(roots) == before

    for change in (lambda: (code / "helpers" / "more.py").write_text("y = 2\n"),
                   lambda: (code / "defs.yaml").write_text("type: x\n"),
                   lambda: (code / "helpers" / "more.py").unlink()):
        change()
        after = fingerprint(roots)
        assert after != before
        before = after


def test_a_module_is_found_without_importing_it_and_an_unknown_one_cannot_be_watched(tmp_path):
    code = _project(tmp_path)
    (code / "my_team").mkdir()
    (code / "my_team" / "__init__.py").write_text("raise SystemExit('imported')\n")
    roots = code_roots(CodeTarget(module_name="my_team.definitions", working_directory=str(code)))
    assert roots == sorted({code.resolve(), (code / "my_team").resolve()})
    assert "my_team" not in sys.modules
    assert code_roots(CodeTarget(module_name="no_such_team_module", working_directory=str(code))) is None
    assert code_roots(CodeTarget(module_name="my_team", working_directory=str(code),
                                 executable_path="/usr/bin/another-python")) is None


class MappedFinder(importlib.abc.MetaPathFinder):
    """What setuptools installs for ``pip install -e .``: a finder on ``sys.meta_path`` mapping a top-level name to
    the project's folder, which is on no ``sys.path`` entry."""

    def __init__(self, name: str, folder: Path):
        self.name, self.folder = name, folder

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        return importlib.util.spec_from_file_location(fullname, self.folder / "__init__.py",
                                                      submodule_search_locations=[str(self.folder)])


def test_a_package_installed_in_editable_mode_is_watched_without_importing_it(tmp_path, monkeypatch):
    elsewhere = tmp_path / "checkout" / "src" / "team_editable"
    elsewhere.mkdir(parents=True)
    (elsewhere / "__init__.py").write_text("raise SystemExit('imported')\n")
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, MappedFinder("team_editable", elsewhere)])
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.chdir(home)
    roots = code_roots(CodeTarget(module_name="team_editable.definitions", working_directory=str(home)))
    assert roots == sorted({home.resolve(), elsewhere.resolve()})
    assert "team_editable" not in sys.modules


def test_this_package_is_watched_from_a_daemon_started_in_another_folder(tmp_path):
    """The demo's daemon runs in its home, where neither the working directory nor sys.path holds the package (an
    editable install: a finder maps it; a wheel: site-packages): its code files are still found."""
    probe = ("import importlib.util, json\n"
             "from pathlib import Path\n"
             "from backfill_assets.integration.runs.code_files import CodeTarget, code_roots\n"
             "roots = code_roots(CodeTarget(module_name='backfill_assets.examples.orders.definitions',\n"
             "                              working_directory='.'))\n"
             "where = importlib.util.find_spec('backfill_assets').submodule_search_locations[0]\n"
             "print(json.dumps([[str(r) for r in roots or []], str(Path(where).resolve())]))\n")
    done = subprocess.run([sys.executable, "-P", "-c", probe], cwd=tmp_path,
                          capture_output=True, text=True, check=True)
    roots, package = json.loads(done.stdout)
    assert package in roots and str(tmp_path.resolve()) in roots, (roots, package)


@pytest.mark.parametrize("limit", [2])
def test_past_its_file_limit_a_location_is_reloaded_as_dagster_does(tmp_path, monkeypatch, limit):
    code = _project(tmp_path)
    monkeypatch.setattr("backfill_assets.integration.runs.code_files.MAX_FILES", limit)
    (code / "extra.py").write_text("")
    assert fingerprint([code]) is None


def test_a_code_server_the_daemon_only_connects_to_has_no_files_to_watch_and_is_reloaded_as_dagster_does():
    from dagster._core.remote_origin import GrpcServerCodeLocationOrigin

    from backfill_assets.integration.runs.dagster_adapter.origins import loadable_target
    from backfill_assets.integration.runs.dagster_adapter.workspace_reload import workspace_fingerprint

    origin = GrpcServerCodeLocationOrigin(host="localhost", port=4266, location_name="served")

    class ConnectsOnly:  # the controller's part workspace_fingerprint reads
        class _workspace_process_context:  # noqa: N801 - the attribute's own name
            _origins = [origin]

    assert loadable_target(origin) is None
    assert workspace_fingerprint(ConnectsOnly) == (origin.get_id(), None)
