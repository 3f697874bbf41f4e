"""The code location's snapshot that lets ``request create`` skip importing Dagster (integration/location_cache.py):
read back only while it still describes the code location, and never freezing another code version than a fresh
load of the code location computes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from backfill_assets.engine.model.concurrency import RunLimit
from backfill_assets.engine.model.settings import ENV_CODE_VERSION
from backfill_assets.engine.plan.creation import QueueLimits
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.daemon_lease import DaemonLease, LeaseHolder
from backfill_assets.engine.store.wakeup import create_wakeup_file
from backfill_assets.integration.location_cache import installed_digest, recall, remember, snapshot_path
from backfill_assets.integration.snapshot_service import create_service

MODULE = "snaploc.definitions"
LIMITS = QueueLimits(4, [RunLimit("backfill/lane", 2, "backfill")], "dagster.yaml")
TRANSFORM = '''
import pandas as pd

from backfill_assets import BusinessCalendar, gated_asset, not_empty


@gated_asset(calendar=BusinessCalendar("Europe/Berlin", "2024-01-01"), audits=[not_empty()])
def daily_usage(interval) -> pd.DataFrame:
    """kWh per meter and business day."""
    return pd.DataFrame({"sensor_id": ["a"], "kwh": [1.0]})
'''
DEFINITIONS = '''
from backfill_assets import backfill_definitions
from snaploc.assets import daily_usage

defs = backfill_definitions(assets=[daily_usage], location="snaploc")
'''
# A fresh interpreter: the snapshot read back (no Dagster imported) and the code version it freezes, or the code
# location loaded and the version a run of it computes.
RECALLED = """
import json, sys
from pathlib import Path
from backfill_assets.integration.location_cache import recall
from backfill_assets.engine.model.settings import code_version
found = recall(Path(sys.argv[1]), sys.argv[2], Path.cwd())
print(json.dumps({"version": found and code_version(sources=found.graph.code_sources),
                  "dagster": "dagster" in sys.modules}))
"""
LOADED = """
import json, sys
from pathlib import Path
from backfill_assets.cli.code_location import load_code_location
from backfill_assets.engine.model.settings import code_version
from backfill_assets.integration.location_cache import remember
from backfill_assets.engine.plan.creation import QueueLimits
location = load_code_location(sys.argv[2], Path.cwd())
remember(Path(sys.argv[1]), sys.argv[2], Path.cwd(), location.graph, QueueLimits(None, [], "none"))
print(json.dumps({"version": code_version(sources=location.graph.code_sources)}))
"""


def _make_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    root = tmp_path / "project"
    (root / "snaploc").mkdir(parents=True)
    (root / "snaploc" / "__init__.py").write_text("")
    (root / "snaploc" / "assets.py").write_text(TRANSFORM)
    (root / "snaploc" / "definitions.py").write_text(DEFINITIONS)
    home = tmp_path / "home"
    home.mkdir()
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    monkeypatch.chdir(root)
    monkeypatch.delenv(ENV_CODE_VERSION, raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    monkeypatch.setenv("BACKFILL_CATALOG_URL", f"sqlite:///{tmp_path / 'catalog.db'}")
    return root, home


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A code location of its own package in a project folder (the working directory), outside this library."""
    return _make_project(tmp_path, monkeypatch)


# The tests of a command on the snapshot share one project and its request (one worker runs them): each removes the
# snapshot, runs the command loading the code location, then again on the snapshot it left.
CREATED = pytest.mark.xdist_group("integration/test_location_cache/created")


@pytest.fixture(scope="module")
def created(tmp_path_factory):
    """``project`` with a request of 2024-01-02..03 created by ``backfill-assets request create``: (root, home,
    request id). The commands' environment is the project's; this process's is left as it was."""
    with pytest.MonkeyPatch.context() as monkeypatch:
        root, home = _make_project(tmp_path_factory.mktemp("created"), monkeypatch)
        env = _env(root)
    made, _ = _cli(root, "request", "create", "--assets", "daily_usage", "--from", "2024-01-02", "--to",
                   "2024-01-03", "--requested-by", "ana", env=env)
    return root, home, made["request_id"], env


def _run(script: str, home: Path, cwd: Path) -> dict:
    done = subprocess.run([sys.executable, "-c", script, str(home), MODULE], cwd=cwd, capture_output=True, text=True,
                          check=True, env=_env(cwd))
    return json.loads(done.stdout.strip().splitlines()[-1])


def _env(cwd: Path) -> dict[str, str]:
    import os

    return {**os.environ, "PYTHONPATH": os.pathsep.join([str(cwd), *sys.path[1:]])}


def test_a_recalled_snapshot_freezes_the_version_a_fresh_load_computes_without_importing_dagster(project):
    root, home = project
    loaded = _run(LOADED, home, root)
    recalled = _run(RECALLED, home, root)
    assert recalled == {"version": loaded["version"], "dagster": False}
    assert "loc-" in loaded["version"]  # the code location's own files are part of it


@pytest.mark.parametrize("change", ["edit the transform", "add a data file", "edit dagster.yaml", "set a variable"])
def test_a_snapshot_is_not_read_once_anything_it_came_from_changed(project, change):
    root, home = project
    first = _run(LOADED, home, root)["version"]
    env_change = {}
    if change == "edit the transform":
        (root / "snaploc" / "assets.py").write_text(TRANSFORM.replace("1.0", "2.0"))
    elif change == "add a data file":
        (root / "snaploc" / "usage.sql").write_text("select 1")
    elif change == "edit dagster.yaml":
        (home / "dagster.yaml").write_text("telemetry:\n  enabled: true\n")
    else:
        env_change = {"TEAM_SETTING": "changed"}
    done = subprocess.run([sys.executable, "-c", RECALLED, str(home), MODULE], cwd=root, capture_output=True,
                          text=True, check=True, env={**_env(root), **env_change})
    assert json.loads(done.stdout.strip().splitlines()[-1])["version"] is None
    if change in ("edit the transform", "add a data file"):  # and a fresh load freezes the new code's version
        assert _run(LOADED, home, root)["version"] != first


def test_a_damaged_or_missing_snapshot_is_not_read(project):
    root, home = project
    assert recall(home, MODULE, root) is None
    _run(LOADED, home, root)
    snapshot_path(home, MODULE, root).write_text("{not json")
    assert recall(home, MODULE, root) is None


@pytest.fixture
def loaded(project, monkeypatch):
    """``project`` loaded in this process (its folder on the import path, its package forgotten afterwards): (root,
    home, the code location). The test writes the snapshot: the environment is part of its key, and pytest names
    the test's phase in it (``PYTEST_CURRENT_TEST``)."""
    from backfill_assets.cli.code_location import load_code_location

    root, home = project
    monkeypatch.syspath_prepend(str(root))
    try:
        yield root, home, load_code_location(MODULE, root)
    finally:
        for name in [m for m in sys.modules if m.split(".")[0] == "snaploc"]:
            del sys.modules[name]


def test_the_queue_limits_come_back_as_they_were_read(loaded):
    root, home, location = loaded
    remember(home, MODULE, root, location.graph, LIMITS)
    found = recall(home, MODULE, root)
    assert found is not None and found.queue_limits == LIMITS
    assert found.graph.names == location.graph.names and found.graph.calendar == location.graph.calendar


def test_a_file_unchanged_since_well_before_the_snapshot_is_not_read_and_an_edit_is_seen_whatever_its_times(
        loaded, monkeypatch):
    """The snapshot keeps each first-party file's digest with its identity on disk: a later command reads only
    what changed since. An edit that keeps the file's size and puts its modification time back (``cp -p``,
    ``rsync -t``) still changes its change time, so it is still seen."""
    from backfill_assets.integration import location_cache

    root, home, location = loaded
    remember(home, MODULE, root, location.graph, LIMITS)
    files = json.loads(snapshot_path(home, MODULE, root).read_text())["files"]
    transform = str((root / "snaploc" / "assets.py").resolve())
    assert transform in files and len(files) > 100  # the tests', this library's and the code location's
    read: list[str] = []
    content = location_cache._content
    monkeypatch.setattr(location_cache, "_content", lambda path: read.append(str(path)) or content(path))
    monkeypatch.setattr(location_cache, "RACY_SECONDS", 0.0)  # every file here changed before the snapshot
    assert recall(home, MODULE, root) is not None
    assert not set(read) & set(files)  # none of them read again
    monkeypatch.setattr(location_cache, "RACY_SECONDS", float("inf"))  # as if all changed just before it: all read
    read.clear()
    assert recall(home, MODULE, root) is not None and set(files) <= set(read)
    monkeypatch.setattr(location_cache, "RACY_SECONDS", 0.0)
    before = os.stat(transform)
    Path(transform).write_text(TRANSFORM.replace("1.0", "2.0"))  # the same size
    os.utime(transform, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(transform).st_size == before.st_size and os.stat(transform).st_mtime_ns == before.st_mtime_ns
    record = json.loads(snapshot_path(home, MODULE, root).read_text())
    digests = location_cache._Digests(record["stamps"], record["written_at"])
    assert location_cache._key(home, MODULE, root, record["files"], digests) != record["key"]  # the key alone
    assert recall(home, MODULE, root) is None


def test_the_quick_create_service_needs_a_daemon_watching_this_home(loaded, tmp_path):
    root, home, location = loaded
    remember(home, MODULE, root, location.graph, LIMITS)
    catalog = Catalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    assert create_service(home, MODULE, root, "ana") is None  # no daemon: the command loads the location
    elsewhere = LeaseHolder.this_process(str(tmp_path / "elsewhere"))
    DaemonLease(catalog).acquire(elsewhere, 60)
    create_wakeup_file(home)
    assert create_service(home, MODULE, root, "ana") is None  # a daemon of another home
    DaemonLease(catalog).release(elsewhere)
    DaemonLease(catalog).acquire(LeaseHolder.this_process(str(home)), 60)
    quick = create_service(home, MODULE, root, "ana")
    assert quick is not None and quick.graph.names == ("daily_usage",)
    assert quick.context.queue_limits() == LIMITS


def test_the_snapshot_graph_keeps_every_flag_the_request_reads():
    from backfill_assets.engine.model.graph_snapshot import graph_of_record, graph_record
    from tests.orders import GRAPH

    back = graph_of_record(json.loads(json.dumps(graph_record(GRAPH))))
    for spec in GRAPH:
        again = back[spec.name]
        assert (again.upstream, again.depends_on_past, again.side_effect, again.order, again.parallel_days,
                again.pool, again.target, again.retries, again.owners) == (
                    spec.upstream, spec.depends_on_past, spec.side_effect, spec.order, spec.parallel_days,
                    spec.pool, spec.target, spec.retries, spec.owners)
        assert (again.config is None) == (spec.config is None)
    assert (back.calendar, back.location, back.access, back.cleanup) == (
        GRAPH.calendar, GRAPH.location, GRAPH.access, GRAPH.cleanup)


def _install(site: Path, version_hash: str) -> Path:
    """A wheel's install of ``snappkg`` 1.0 into ``site``: its module, and its dist-info whose RECORD lists it."""
    (site / "snappkg").mkdir(parents=True)
    (site / "snappkg" / "__init__.py").write_text(f"BUILD = {version_hash!r}\n")
    meta = site / "snappkg-1.0.dist-info"
    meta.mkdir()
    (meta / "METADATA").write_text("Metadata-Version: 2.1\nName: snappkg\nVersion: 1.0\n")
    (meta / "RECORD").write_text(f"snappkg/__init__.py,sha256={version_hash},20\nsnappkg-1.0.dist-info/RECORD,,\n")
    return meta


@pytest.mark.parametrize("same_size", [True, False])
def test_a_distribution_reinstalled_at_the_same_version_is_another_key(tmp_path, same_size):
    import os
    import shutil

    site = tmp_path / "site-packages"
    first = _install(site, "a" * 8)
    before = installed_digest([str(site)])
    assert installed_digest([str(site)]) == before  # reading what is installed changes nothing
    installed_at = first.stat().st_mtime_ns
    shutil.rmtree(site / "snappkg")
    shutil.rmtree(first)  # non-editable reinstall of a project built again: same folder names, new files
    again = _install(site, ("b" if same_size else "bb") * 8)
    later = installed_at + 1_000_000_000  # a reinstall happens after the install it replaces
    for path in (again / "RECORD", again):
        os.utime(path, ns=(later, later))
    assert sorted(os.listdir(site)) == ["snappkg", "snappkg-1.0.dist-info"]  # the listing alone is the same
    assert installed_digest([str(site)]) != before


def _cli(root: Path, *args: str, env: dict[str, str] | None = None) -> tuple[dict, bool]:
    """``backfill-assets ... --json`` from the project's folder: its JSON, and whether it imported Dagster (the
    interpreter's import log, set for every call alike since the key covers the environment)."""
    env = {**(env or _env(root)), "BACKFILL_MODULE": MODULE, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run([str(Path(sys.executable).parent / "backfill-assets"), *args, "--json"], cwd=root, env=env,
                          capture_output=True, text=True, check=True)
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return json.loads(done.stdout), "dagster" in imported


@CREATED
def test_a_request_show_that_loaded_the_code_location_leaves_its_snapshot_for_the_next(created):
    root, home, request_id, env = created
    snapshot_path(home, MODULE, root).unlink()  # as from a folder no command had loaded the code location in
    shown, loaded = _cli(root, "request", "show", request_id, env=env)
    assert loaded and snapshot_path(home, MODULE, root).is_file()
    again, loaded = _cli(root, "request", "show", request_id, env=env)
    assert not loaded and again == shown


def test_first_party_files_are_named_by_their_real_paths_through_linked_folders_and_files(tmp_path, monkeypatch):
    """The key names each first-party file as ``os.path.realpath`` does, though folders are resolved once each."""
    from backfill_assets.integration.location_cache import _first_party_files

    real = tmp_path / "real" / "linkpkg"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("")
    (real / "inner.py").write_text("VALUE = 1\n")
    (tmp_path / "elsewhere.py").write_text("VALUE = 2\n")
    (real / "linked.py").symlink_to(tmp_path / "elsewhere.py")
    (tmp_path / "through").symlink_to(tmp_path / "real")
    monkeypatch.syspath_prepend(str(tmp_path / "through"))
    for name in ("linkpkg", "linkpkg.inner", "linkpkg.linked"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    import linkpkg.inner  # noqa: F401
    import linkpkg.linked  # noqa: F401

    files = _first_party_files()
    for name in ("linkpkg", "linkpkg.inner", "linkpkg.linked"):
        assert str(Path(sys.modules[name].__file__).resolve()) in files
    assert str((tmp_path / "elsewhere.py").resolve()) in files
    assert not any(f.startswith(str(tmp_path / "through")) for f in files)
    for name in ("linkpkg", "linkpkg.inner", "linkpkg.linked"):
        monkeypatch.delitem(sys.modules, name)

def _cli_text(root: Path, *args: str, env: dict[str, str]) -> tuple[str, int, bool]:
    """``backfill-assets ...`` from the project's folder: its output as printed, its exit status, and whether it
    imported the code location (its package ``snaploc``)."""
    env = {**env, "BACKFILL_MODULE": MODULE, "PYTHONPROFILEIMPORTTIME": "1"}
    done = subprocess.run([str(Path(sys.executable).parent / "backfill-assets"), *args], cwd=root, env=env,
                          capture_output=True, text=True, check=False)
    assert done.returncode in (0, 1), done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    return done.stdout, done.returncode, any(name.partition(".")[0] == "snaploc" for name in imported)


@pytest.mark.parametrize("command", [
    ("reconcile", "{request}"), ("reconcile", "{request}", "--json"),
    ("request", "create", "--assets", "daily_usage", "--from", "2024-01-02", "--to", "2024-01-04", "--reprocess",
     "completed", "--dry-run"),
    ("request", "create", "--assets", "daily_usage", "--from", "2024-01-02", "--to", "2024-01-04", "--reprocess",
     "completed", "--dry-run", "--json"),
])
@CREATED
def test_reconcile_and_the_dry_run_on_the_snapshot_print_what_the_loaded_code_location_prints(created, command):
    root, home, request_id, env = created
    argv = [part.format(request=request_id) for part in command]
    snapshot_path(home, MODULE, root).unlink()  # as from a folder no command had loaded the code location in
    loaded_text, loaded_status, loaded = _cli_text(root, *argv, env=env)
    assert loaded and snapshot_path(home, MODULE, root).is_file()  # the command left its snapshot
    quick_text, quick_status, reloaded = _cli_text(root, *argv, env=env)
    assert not reloaded  # the facts from Dagster's instance, the graph from the snapshot
    assert (quick_text, quick_status) == (loaded_text, loaded_status)
    assert request_id in quick_text or "2024-01-04" in quick_text  # an answer, not an empty one


INSTANCE_SERVICE = """
import json, sys
from pathlib import Path
from backfill_assets.integration.snapshot_service import instance_service
service = instance_service(Path(sys.argv[1]), sys.argv[2], Path.cwd(), "ana")
print(json.dumps(service and {"port": type(service.context.dagster).__name__, "graph": service.context.graph.names,
                              "limits": service.context.queue_limits().source,
                              "location": "snaploc.definitions" in sys.modules}))
"""


def test_the_instance_service_is_the_snapshots_graph_with_dagsters_instance(project):
    root, home = project
    assert _run(INSTANCE_SERVICE, home, root) is None  # no snapshot: the caller loads the code location
    _run(LOADED, home, root)
    assert _run(INSTANCE_SERVICE, home, root) == {"port": "InstancePort", "graph": ["daily_usage"],
                                                  "limits": "none", "location": False}
