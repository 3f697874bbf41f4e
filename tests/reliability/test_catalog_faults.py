"""Catalog faults: a published manifest tampered with, a catalog that is not one, an empty catalog beside a warehouse
that holds versions, a PostgreSQL catalog table locked by another session.

Each trial damages one thing and then asks the doors an operator uses (`read`, `reconcile --verify-files`,
`catalog version`, a downstream run, a publish) to say so in one line, naming what is wrong, and change nothing.
"""

from __future__ import annotations

import json
import random
import shutil
import time
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from backfill_assets.cli import cli
from backfill_assets.engine.model.errors import CatalogBusy
from backfill_assets.engine.model.settings import ENV_CATALOG_LOCK_TIMEOUT
from backfill_assets.engine.store import db
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.storage import MANIFEST_FILE
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from tests.corruption import CATALOG_DAMAGE
from tests.engine.catalog_helpers import PASSED, begin_verified, identity, table_locked
from tests.orders import MODULE, run_partitions

from . import mode
from .invariants import assert_readers_see
from .republish import assert_downstream_refuses, assert_reported_as_gap, publish_again

DAYS = ["2022-09-03", "2022-09-04"]


def _one_error_line(result: Result, *needles: str) -> str:
    """The refusal every door gives: exit 2, nothing on stdout, one `error:` line holding each of ``needles``."""
    lines = result.stderr.splitlines()
    assert result.exit_code == 2 and result.stdout == "", (result.exit_code, result.output[:400])
    assert len(lines) == 1 and lines[0].startswith("error: "), lines[:5]
    missing = [n for n in needles if n not in lines[0]]
    assert not missing, f"{missing} not in {lines[0]!r}"
    return lines[0]


# ---- data.tampered_manifest ----------------------------------------------------------------------------------------


def _rows_changed(text: str, rng: random.Random) -> str:
    manifest = json.loads(text)
    manifest["rows"] += rng.randint(1, 9)
    return json.dumps(manifest, indent=2)


def _sha_forged(text: str, rng: random.Random) -> str:
    manifest = json.loads(text)
    manifest["sha256"] = "%064x" % rng.getrandbits(256)
    return json.dumps(manifest, indent=2)


def _identity_forged(text: str, rng: random.Random) -> str:
    manifest = json.loads(text)
    manifest["identity"] = {**manifest["identity"], "backfill/run_id": f"forged-{rng.randint(0, 999)}"}
    manifest["version_id"] = f"{manifest['version_id']}-forged"
    return json.dumps(manifest, indent=2)


def _corrupted(text: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(text) - 1)
    return text[:i] + "\x00\x7f" + text[i + 1:]


TAMPERINGS = {
    "rows altered": _rows_changed,
    "sha256 forged": _sha_forged,
    "identity forged": _identity_forged,
    "bytes corrupted": _corrupted,
    "deleted": None,
}


@pytest.fixture(scope="module")
def published_env(module_envs):
    env = module_envs("catalog")
    runs = run_partitions(env.instance, DAYS, assets=[RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE])
    assert all(r.success for r in runs), runs
    return env


def tamper_once(env, trial: int, how: str) -> None:
    rng = random.Random(trial)
    request_id, day, version = publish_again(env, trial, DAYS)
    assert version.manifest_sha256, version
    manifest = Path(version.path).parent / MANIFEST_FILE
    original = manifest.read_bytes()
    if TAMPERINGS[how] is None:
        manifest.unlink()
    else:
        manifest.write_text(TAMPERINGS[how](original.decode(), rng))

    # reconcile --verify-files reports it (exit 1), naming the version
    assert_reported_as_gap(env, request_id, version, "manifest does not match the catalog")
    # `read` refuses in one line naming the version and its manifest, and prints no data
    _one_error_line(env.cli("read", ORDER_FACTS, day, "--format", "json"), version.version_id, str(manifest))

    # a downstream run refuses it: fails naming the manifest, publishes and materializes nothing
    assert_downstream_refuses(env, day, str(manifest))

    # the manifest as written restores every reader: the check is exact
    manifest.write_bytes(original)
    assert_readers_see(env, ORDER_FACTS, day, {version.version_id})
    assert env.cli_json("reconcile", request_id, "--verify-files")["gaps"] == []


@pytest.mark.timeout(mode.timeout(per_trial_seconds=20))
def test_a_tampered_manifest_is_refused_by_every_reader_and_reported(published_env, trials):
    kinds = list(TAMPERINGS)
    with trials("data.tampered_manifest") as klass:
        for i in range(max(mode.TRIALS, len(kinds))):  # every kind of tampering at least once
            how = kinds[i % len(kinds)]
            with klass.trial(f"{i} ({how})"):
                tamper_once(published_env, i, how)
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"


# ---- catalog.damaged / catalog.empty_beside_warehouse -------------------------------------------------------------


def _cli(home: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["--home", str(home), "-m", MODULE, *args])


@pytest.fixture
def bare_home(tmp_path, monkeypatch):
    """A home of its own: its catalog.db and warehouse under it (the settings' defaults)."""
    for var in ("BACKFILL_CATALOG_URL", "BACKFILL_WAREHOUSE", "DAGSTER_PG_URL", ENV_CATALOG_LOCK_TIMEOUT):
        monkeypatch.delenv(var, raising=False)

    def make(name: str) -> Path:
        home = tmp_path / name
        home.mkdir()
        monkeypatch.setenv("DAGSTER_HOME", str(home))  # the CLI sets it: restored after the test
        return home

    yield make
    db.dispose_all()


def damage_once(home: Path, kind: str) -> None:
    path = home / "catalog.db"
    damage, says = CATALOG_DAMAGE[kind]
    damage(path)
    db.dispose_all()
    for args in (("read", ORDER_FACTS, DAYS[0]), ("versions", ORDER_FACTS, DAYS[0]), ("catalog", "version")):
        _one_error_line(_cli(home, *args), str(path), says, "restore it from a backup")
    assert path.is_dir() if kind == "a directory" else path.is_file()  # left as it was found


@pytest.mark.timeout(mode.timeout(per_trial_seconds=5))
def test_a_damaged_catalog_is_one_line_naming_it(bare_home, trials):
    kinds = list(CATALOG_DAMAGE)
    with trials("catalog.damaged") as klass:
        for i in range(max(mode.TRIALS, len(kinds))):
            kind = kinds[i % len(kinds)]
            with klass.trial(f"{i} ({kind})"):
                damage_once(bare_home(f"damaged-{i}"), kind)
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"


def empty_once(published_env, home: Path, trial: int) -> None:
    shutil.copytree(published_env.settings.warehouse_root, home / "warehouse")  # a warehouse that holds versions
    path = home / "catalog.db"
    if trial % 2 == 0:
        path.touch()
    for args in (("read", ORDER_FACTS, DAYS[0]), ("request", "list"), ("catalog", "version")):
        _one_error_line(_cli(home, *args), str(path), str(home / "warehouse"), "holds versions",
                        "catalog init --force")
    assert (path.stat().st_size == 0) if trial % 2 == 0 else not path.exists()  # not created
    # starting over is a decision, taken explicitly
    assert _cli(home, "catalog", "init", "--force").exit_code == 0
    assert "no published version" in _cli(home, "read", ORDER_FACTS, DAYS[0]).output


@pytest.mark.timeout(mode.timeout(per_trial_seconds=10))
def test_an_empty_catalog_beside_a_warehouse_with_versions_is_refused(published_env, bare_home, trials):
    with trials("catalog.empty_beside_warehouse") as klass:
        for i in range(max(mode.TRIALS, 2)):  # zero-length and missing at least once
            with klass.trial(f"{i} ({'zero-length' if i % 2 == 0 else 'missing'})"):
                empty_once(published_env, bare_home(f"empty-{i}"), i)
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"


# ---- catalog.held_lock -------------------------------------------------------------------------------------------

LOCK_SECONDS = 1


def held_lock_once(url: str, home: Path, trial: int) -> None:
    catalog = Catalog(url)
    waiting = begin_verified(catalog, identity(run_id=f"locked-{trial}", key="2022-10-01"))
    with table_locked(url):
        started = time.monotonic()
        _one_error_line(_cli(home, "read", ORDER_FACTS, "2022-10-01"), "lock held by another session",
                        "pg_stat_activity")
        with pytest.raises(CatalogBusy, match="lock held by another session"):
            catalog.publish(waiting, PASSED)
        assert time.monotonic() - started < 10 * LOCK_SECONDS, "waited past the lock timeout"
    assert catalog.get(waiting).state == "VERIFYING"  # the refused publish changed nothing
    catalog.publish(waiting, PASSED)  # and the lock released, it goes through


@pytest.mark.postgres
@pytest.mark.timeout(mode.timeout(per_trial_seconds=15))
def test_a_held_catalog_lock_is_a_named_error_within_the_lock_timeout(pg_server, bare_home, monkeypatch, trials):
    from tests.conftest import fresh_pg_database

    monkeypatch.setenv(ENV_CATALOG_LOCK_TIMEOUT, str(LOCK_SECONDS))
    with fresh_pg_database(pg_server) as url, trials("catalog.held_lock") as klass:
        monkeypatch.setenv("BACKFILL_CATALOG_URL", url)
        for i in range(mode.TRIALS):
            with klass.trial(str(i)):
                held_lock_once(url, bare_home(f"locked-{i}"), i)
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"
