"""``Settings.from_env`` keeps its last answer only while what it was read from is unchanged."""

from __future__ import annotations

import pytest

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.settings import Settings


def test_the_settings_are_read_again_when_the_environment_or_the_working_directory_changes(tmp_path, monkeypatch):
    monkeypatch.delenv("BACKFILL_CATALOG_URL", raising=False)
    monkeypatch.delenv("BACKFILL_WAREHOUSE", raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "a"))
    first = Settings.from_env()
    assert Settings.from_env() is first  # unchanged: the same answer, not read again
    assert first.catalog_url == f"sqlite:///{tmp_path / 'a' / 'catalog.db'}"

    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "b"))  # a test, or a process, switching homes
    assert Settings.from_env().catalog_url == f"sqlite:///{tmp_path / 'b' / 'catalog.db'}"
    monkeypatch.setenv("BACKFILL_CATALOG_URL", "sqlite:////elsewhere/catalog.db")
    assert Settings.from_env().catalog_url == "sqlite:////elsewhere/catalog.db"

    monkeypatch.delenv("BACKFILL_CATALOG_URL")
    monkeypatch.setenv("DAGSTER_HOME", "relative_home")  # resolved against the working directory
    for folder in ("x", "y"):
        (tmp_path / folder).mkdir()
        monkeypatch.chdir(tmp_path / folder)
        assert Settings.from_env().dagster_home == tmp_path / folder / "relative_home"
    assert Settings.from_env({"DAGSTER_HOME": str(tmp_path / "given")}).dagster_home == tmp_path / "given"


def test_a_home_whose_path_holds_a_question_mark_is_refused(tmp_path):
    with pytest.raises(InvalidInput, match=r"a '\?' in its path"):
        Settings.from_env({"DAGSTER_HOME": str(tmp_path / "a?b")})
