"""The dependency ``backfill-assets init`` writes names the library the way it was installed here: a direct
reference to the folder, file, URL or checkout it came from (no index serves those), a version specifier when it
came from an index. Otherwise the new project cannot be installed anywhere but here."""

from __future__ import annotations

import json
import tomllib
from importlib import metadata
from pathlib import Path

from click.testing import CliRunner
from packaging.requirements import Requirement

from backfill_assets.cli import cli
from backfill_assets.scaffold.requirement import direct_url, library_requirement

ROOT = Path(__file__).resolve().parents[2]


class _Installed(metadata.Distribution):
    """A distribution whose files are given: what pip recorded, without installing anything."""

    def __init__(self, files: dict[str, str]):
        self._files = files

    def read_text(self, filename):
        return self._files.get(filename)

    def locate_file(self, path):
        return Path(path)


def _dist(direct: dict | None) -> _Installed:
    files = {"METADATA": "Metadata-Version: 2.1\nName: backfill_assets\nVersion: 0.4.0\n"}
    if direct is not None:
        files["direct_url.json"] = json.dumps(direct)
    return _Installed(files)


def test_init_in_a_checkout_install_depends_on_that_checkout_by_its_file_url(tmp_path):
    result = CliRunner().invoke(cli, ["init", str(tmp_path / "shop"), "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [dependency] = tomllib.loads((tmp_path / "shop/pyproject.toml").read_text())["project"]["dependencies"]
    requirement = Requirement(dependency)  # valid PEP 508
    assert (requirement.name, requirement.extras) == ("backfill_assets", {"dg"})
    assert requirement.url == ROOT.as_uri(), dependency  # this test suite runs on an editable install of ROOT


def test_an_index_install_gets_a_version_specifier():
    assert library_requirement(_dist(None)) == "backfill_assets[dg]>=0.4.0"


def test_a_wheel_file_or_url_install_gets_a_direct_reference_to_it():
    wheel = {"url": "file:///opt/dist/backfill_assets-0.4.0-py3-none-any.whl", "archive_info": {}}
    assert library_requirement(_dist(wheel)) == f"backfill_assets[dg] @ {wheel['url']}"
    remote = {"url": "https://example.org/backfill_assets-0.4.0.tar.gz", "archive_info": {"hash": "sha256=ab"}}
    assert library_requirement(_dist(remote)) == f"backfill_assets[dg] @ {remote['url']}"


def test_a_git_install_pins_the_commit_it_installed():
    git = {"url": "https://example.org/team/backfill_assets.git",
           "vcs_info": {"vcs": "git", "commit_id": "0123abcd", "requested_revision": "main"}}
    assert library_requirement(_dist(git)) == (
        "backfill_assets[dg] @ git+https://example.org/team/backfill_assets.git@0123abcd")


def test_a_damaged_or_empty_record_falls_back_to_the_version():
    assert direct_url("{not json") is None and direct_url("") is None and direct_url('{"url": ""}') is None
    assert library_requirement(_dist({"dir_info": {}})) == "backfill_assets[dg]>=0.4.0"
