"""What a code location's code version covers (engine/model/code_inputs.py): its package's data files, the
first-party packages it imports, the versions of the distributions it imports, and what it names itself — each
edit a new version, found from the source alone and bounded."""

from __future__ import annotations

import importlib
import shutil
import sys
from pathlib import Path

import pytest

from backfill_assets.engine.model import code_inputs
from backfill_assets.engine.model.code_inputs import CodeInputs, CodeSources, changed_parts, find_code_sources
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.settings import code_version
from backfill_assets.engine.plan.driver_tick import code_version_block

TRANSFORM = """\
from pathlib import Path

QUERY = Path(__file__).parent / "queries" / "daily.sql"


def daily(interval):
    import team_lib.rates  # imported where it is used: still read from the source
    import fakecalc
    return QUERY.read_text(), team_lib.rates.FACTOR, fakecalc
"""


def _write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def _dist(site: Path, module: str, name: str, version: str) -> None:
    """An installed distribution as pip leaves it: the module and its dist-info, in a folder named site-packages."""
    _write(site / module / "__init__.py", "")
    for old in site.glob(f"{name.replace('-', '_')}-*.dist-info"):
        shutil.rmtree(old)  # an upgrade replaces the dist-info
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    _write(info / "METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    _write(info / "top_level.txt", f"{module}\n")


def _new_process() -> None:
    """What a restarted code server sees: every per-process cache forgotten (the version is the loaded code's)."""
    for cached in (code_inputs._files_digest, code_inputs._version_of, code_inputs._providers):
        cached.cache_clear()
    importlib.invalidate_caches()


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A code location (``meters``: a transform module beside ``queries/daily.sql``) importing a first-party
    package outside it (``team_lib``) and an installed distribution (``fakecalc``)."""
    root, lib, site = tmp_path / "project", tmp_path / "shared", tmp_path / "venv" / "site-packages"
    _write(root / "meters" / "__init__.py", "")
    _write(root / "meters" / "transforms.py", TRANSFORM)
    _write(root / "meters" / "queries" / "daily.sql", "select day, sum(kwh) from readings group by day\n")
    _write(lib / "team_lib" / "__init__.py", "")
    _write(lib / "team_lib" / "rates.py", "import yaml_free_module_that_is_not_installed\nFACTOR = 1\n")
    _write(lib / "team_lib" / "rates.yaml", "factor: 1\n")
    _dist(site, "fakecalc", "fakecalc", "1.0")
    for folder in (root, lib, site):
        monkeypatch.syspath_prepend(str(folder))
    importlib.import_module("meters.transforms")
    yield root, lib, site
    for name in [n for n in sys.modules if n.split(".")[0] in ("meters", "team_lib", "fakecalc", "fakeyaml")]:
        del sys.modules[name]
    _new_process()


def _sources(**inputs) -> CodeSources:
    return find_code_sources(["meters.transforms"], CodeInputs(**inputs))


def _version(sources: CodeSources | None = None) -> str:
    return code_version({}, sources if sources is not None else _sources())


def test_the_sources_are_the_packages_files_the_first_party_packages_and_the_distributions_imported(project):
    sources = _sources()
    assert [label for label, _ in sources.files] == [
        "meters/__init__.py", "meters/queries/daily.sql", "meters/transforms.py",
        "team_lib/__init__.py", "team_lib/rates.py", "team_lib/rates.yaml",
    ]
    # The standard library (pathlib), a module that is not installed and this library are not distributions.
    assert sources.distributions == (("fakecalc", "1.0"),)
    assert "+loc-" in _version(sources) and "+deps-" in _version(sources)


def test_editing_a_template_beside_the_transform_is_a_new_code_version(project):
    root, _, _ = project
    before = _version()
    _write(root / "meters" / "queries" / "daily.sql", "select day, sum(kwh) * 1000 from readings group by day\n")
    assert _version() == before  # this process computed it from the code it loaded
    _new_process()
    assert _version() != before


def test_editing_a_first_party_package_it_imports_is_a_new_code_version(project):
    _, lib, _ = project
    before = _version()
    _write(lib / "team_lib" / "rates.yaml", "factor: 2\n")
    _new_process()
    assert _version() != before


def test_upgrading_an_installed_distribution_it_imports_is_a_new_code_version(project):
    _, _, site = project
    before = _version()
    _dist(site, "fakecalc", "fakecalc", "1.1")
    _new_process()
    after = _version()
    assert after != before
    assert changed_parts(before, after) == ["the installed distributions it imports"]
    assert "the installed distributions it imports changed" in code_version_block(before, after)


def test_a_distribution_named_otherwise_than_its_module_is_found(project):
    root, _, site = project
    _dist(site, "fakeyaml", "FakeYAML-Lib", "6.0")
    _write(root / "meters" / "settings.py", "import fakeyaml\n")
    assert ("fakeyaml-lib", "6.0") in _sources().distributions


def test_imports_are_read_from_the_source_at_any_depth(tmp_path):
    module = _write(tmp_path / "m.py", "\n".join([
        "import a.b as x, c", "from d.e import (f,", "    g)", "from . import relative", "from .h import i",
        "def k():", "    import l  # inside a function", "    importlib.import_module('n.o')",
        "try: import t", "except ImportError: t = None", "x = 1  # import s", "print('v: import w')",
    ]))
    assert code_inputs._imports(str(module)) == {"a", "c", "d", "l", "n", "t"}


def test_caches_bytecode_hidden_folders_and_databases_are_not_read(project):
    root, _, _ = project
    for junk in ("__pycache__/transforms.cpython-311.pyc", ".ipynb_checkpoints/x.sql", ".env", "catalog.db",
                 "run.log", "venv/pyvenv.cfg", "venv/lib/anything.py"):
        _write(root / "meters" / junk, "x")
    assert [label for label, _ in _sources().files if label.startswith("meters/")] == [
        "meters/__init__.py", "meters/queries/daily.sql", "meters/transforms.py"]


def test_what_a_process_happened_to_import_does_not_change_the_sources(project, tmp_path, monkeypatch):
    before = _sources()
    _write(tmp_path / "other" / "unrelated_lib" / "__init__.py", "")
    monkeypatch.syspath_prepend(str(tmp_path / "other"))
    importlib.import_module("unrelated_lib")  # loaded in this process, imported by no module of the location
    try:
        assert _sources() == before
    finally:
        del sys.modules["unrelated_lib"]


def test_dagster_is_orchestration_unless_named(project):
    root, _, _ = project
    _write(root / "meters" / "assets.py", "import dagster as dg\n")
    assert "dagster" not in dict(_sources().distributions)
    assert "dagster" in dict(_sources(distributions=["dagster"]).distributions)


def test_named_inputs_add_and_ignore(project, tmp_path):
    elsewhere = _write(tmp_path / "sql" / "shared.sql", "select 1\n")
    sources = _sources(paths=[elsewhere.parent], ignore_paths=["team_lib/*.yaml"], ignore_distributions=["FakeCalc"])
    labels = [label for label, _ in sources.files]
    assert "sql/shared.sql" in labels and "team_lib/rates.yaml" not in labels
    assert sources.distributions == ()
    before = _version(sources)
    elsewhere.write_text("select 2\n")
    _new_process()
    assert _version(sources) != before


@pytest.mark.parametrize("inputs, words", [
    ({"paths": ["queries"]}, "must be an existing absolute path"),
    ({"distributions": ["surely-not-installed-dist"]}, "is not an installed distribution"),
    ({"paths": "/tmp"}, "must be a list"),
])
def test_named_inputs_are_checked_when_declared(inputs, words):
    with pytest.raises(InvalidInput, match=words):
        CodeInputs(**inputs)


def test_too_much_to_read_is_refused_naming_the_biggest_files_and_the_ways_out(project, monkeypatch):
    root, _, _ = project
    _write(root / "meters" / "fixtures" / "big.csv", "x" * 5000)
    monkeypatch.setattr(code_inputs, "MAX_BYTES", 4096)
    with pytest.raises(InvalidInput, match=r"meters/fixtures/big.csv .*ignore_paths.*BACKFILL_CODE_VERSION"):
        _sources()
    assert _sources(ignore_paths=["meters/fixtures/*"]).files  # left out, the rest is covered


def test_an_override_is_not_searched_for_sources():
    def never() -> CodeSources:
        raise AssertionError("the sources were searched although BACKFILL_CODE_VERSION is set")

    assert code_version({"BACKFILL_CODE_VERSION": "pinned-7"}, never) == "pinned-7"


def test_changed_parts_name_what_differs_and_nothing_for_versions_set_by_hand():
    frozen = "git-abc123456789+loc-11111111+deps-22222222"
    assert changed_parts(frozen, "git-abc123456789+loc-33333333+deps-22222222") == ["the code location's files"]
    assert changed_parts(frozen, "git-abc123456789+1234abcd+loc-11111111+deps-22222222") == ["this library's code"]
    assert changed_parts(frozen, "git-abc123456789+loc-11111111") == ["the installed distributions it imports"]
    assert changed_parts("v1", "v2") == []
    assert code_version_block("v1", "v2") == (
        "blocked: code version changed (frozen v1, loaded v2) — cancel it and create a new request")
