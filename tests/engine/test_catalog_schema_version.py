"""The catalog records its schema version: a fresh catalog is created at head, any other version is refused when
opened (nothing changed, the upgrade command named), and ``upgrade_catalog`` brings one made by the code from before
versioning (tests/fixtures/catalog_before_versioning.db, made by scripts/make_catalog_fixture.py) to exactly
today's schema, rows intact — on SQLite and PostgreSQL."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.script import ScriptDirectory
from sqlalchemy.engine import make_url

from backfill_assets.engine.model.errors import CatalogSchemaMismatch
from backfill_assets.engine.store import db, schema_version
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_upgrade import schema_status, upgrade_catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.schema_baseline import baseline
from backfill_assets.engine.store.schema_version import HEAD, UPGRADE_COMMAND, VERSION_TABLE, SchemaStanding

from .catalog_helpers import identity, published, race_open, race_upgrade, run_racers

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "catalog_before_versioning.db"
# What scripts/make_catalog_fixture.py wrote into it.
FIXTURE_REQUEST = "req-20221101-fixture1"
FIXTURE_VERSION = "order_facts/2022-10-01/fixture-run-1/1"


def _path_of(url: str) -> Path:
    return Path(make_url(url).database)


def _plain_engine(url: str) -> sa.Engine:
    # Not db.engine_for: that one checks (and may create) the schema, which these tests look at from outside.
    return sa.create_engine(url, poolclass=sa.pool.NullPool)


def _schema_of(url: str) -> dict[str, list[str]]:
    """Every table with its columns and indexes, as the database itself reports them."""
    engine = _plain_engine(url)
    try:
        inspector = sa.inspect(engine)
        return {t: sorted([c["name"] for c in inspector.get_columns(t)] + [i["name"] for i in inspector.get_indexes(t)])
                for t in inspector.get_table_names()}
    finally:
        engine.dispose()


def _differences(url: str) -> list:
    engine = _plain_engine(url)
    try:
        with engine.connect() as conn:
            return schema_version.schema_differences(conn)
    finally:
        engine.dispose()


def _revision(url: str) -> str | None:
    engine = _plain_engine(url)
    try:
        with engine.connect() as conn:
            return schema_version.inspect_revision(conn)[0]
    finally:
        engine.dispose()


def _load_fixture(url: str, scratch: Path) -> None:
    """The fixture's catalog at ``url``: on SQLite its file copied, on PostgreSQL its tables made as the code from
    before versioning made them (the baseline, no version table) and the rows of a copy in ``scratch`` copied in."""
    if url.startswith("sqlite"):
        shutil.copyfile(FIXTURE, _path_of(url))
        return
    copy = shutil.copyfile(FIXTURE, scratch / "fixture_copy.db")  # the committed file is never opened
    source, target = _plain_engine(f"sqlite:///{copy}"), _plain_engine(url)
    try:
        with source.connect() as read, target.begin() as write:
            baseline.create_all(write)
            for table in baseline.sorted_tables:
                rows = [dict(r._mapping) for r in read.execute(sa.select(table))]
                if rows:
                    write.execute(table.insert(), rows)
    finally:
        source.dispose()
        target.dispose()


@pytest.fixture
def old_catalog(catalog_url, tmp_path) -> str:
    """A catalog made before the schema was versioned (the fixture's rows), on each backend."""
    _load_fixture(catalog_url, tmp_path)
    return catalog_url


# ---- the revisions ------------------------------------------------------------------------------------------------


def test_head_is_the_last_revision():
    script = ScriptDirectory(str(schema_version.MIGRATIONS_DIR))
    assert script.get_heads() == [HEAD]  # one line of revisions, and HEAD names its end


def test_migrating_an_empty_catalog_through_every_revision_gives_todays_schema(catalog_url):
    """Fails when schema.py changes without a revision that makes the same change (or HEAD is not bumped)."""
    engine = db.create_engine(catalog_url)
    try:
        with engine.begin() as conn:
            schema_version.upgrade_to_head(conn)
    finally:
        engine.dispose()
    assert _revision(catalog_url) == HEAD
    assert _differences(catalog_url) == [], (
        "schema.py differs from what its revisions make: add a revision (docs/OPERATIONS.md, 'Upgrading the "
        "catalog') and set schema_version.HEAD to it")


def test_a_fresh_catalog_is_created_at_head_with_todays_schema(catalog_url):
    Catalog(catalog_url)
    assert _revision(catalog_url) == HEAD
    assert _differences(catalog_url) == []
    assert schema_status(catalog_url).standing == SchemaStanding.AT_HEAD


def test_several_processes_opening_a_fresh_catalog_at_once_all_succeed(catalog_url):
    reports = run_racers(race_open, [(catalog_url,)] * 6)
    assert [r[0] for r in reports] == ["opened"] * 6
    assert _revision(catalog_url) == HEAD
    catalog = Catalog(catalog_url)
    published(catalog, identity())  # one log_head row, one working catalog
    assert [e["seq"] for e in catalog.log_after(0)] == [1]


# ---- a catalog made before versioning -----------------------------------------------------------------------------


def test_opening_a_catalog_from_before_versioning_is_refused_naming_the_command_and_changes_nothing(tmp_path):
    url = f"sqlite:///{tmp_path}/catalog.db"
    _load_fixture(url, tmp_path)
    digest = hashlib.sha256(_path_of(url).read_bytes()).hexdigest()
    with pytest.raises(CatalogSchemaMismatch) as refused:
        Catalog(url)
    assert str(refused.value) == (
        f"catalog {url} has no schema version, this backfill_assets needs {HEAD}: run `{UPGRADE_COMMAND}`"
    )
    db.dispose_all()
    assert hashlib.sha256(_path_of(url).read_bytes()).hexdigest() == digest
    assert sorted(p.name for p in tmp_path.iterdir()) == ["catalog.db"]


def test_opening_a_catalog_from_before_versioning_is_refused_on_every_backend(old_catalog):
    before = _schema_of(old_catalog)
    with pytest.raises(CatalogSchemaMismatch, match=f"has no schema version.*run `{UPGRADE_COMMAND}`"):
        Catalog(old_catalog)
    assert _schema_of(old_catalog) == before and VERSION_TABLE not in before


def test_upgrade_brings_it_to_head_and_its_rows_read_back(old_catalog):
    done = upgrade_catalog(old_catalog)
    assert (done.from_revision, done.to_revision, done.standing_before, done.changed) == (
        None, HEAD, SchemaStanding.UNVERSIONED, True)
    catalog = Catalog(old_catalog)
    assert catalog.current("order_facts", "2022-10-01").version_id == FIXTURE_VERSION
    assert [(e["version_id"], e["action"]) for e in catalog.log_after(0)] == [(FIXTURE_VERSION, "publish")]
    request = Ledger(catalog).get(FIXTURE_REQUEST)
    assert (request.spec.assets, request.spec.partitions) == (
        ("order_facts",), ("2022-10-01", "2022-10-02", "2022-10-03"))
    # It takes new work: a publish numbered after the fixture's (on PostgreSQL through the function it now has).
    assert catalog.publish(_verified(catalog), [{"name": "row_count", "passed": True}]).seq == 2


def _verified(catalog: Catalog) -> str:
    version = catalog.begin_version(identity(run_id="after-upgrade", key="2022-10-01"))
    catalog.mark_verifying(version.version_id, path="/warehouse/x/data.parquet", rows=1, sha256="0" * 64,
                           stats={}, input_versions={})
    return version.version_id


def test_an_upgraded_catalog_is_exactly_todays_schema(old_catalog):
    upgrade_catalog(old_catalog)
    assert _differences(old_catalog) == []


def test_upgrade_again_changes_nothing(old_catalog):
    upgrade_catalog(old_catalog)
    before = _schema_of(old_catalog)
    again = upgrade_catalog(old_catalog)
    assert (again.from_revision, again.standing_before, again.changed) == (HEAD, SchemaStanding.AT_HEAD, False)
    assert _schema_of(old_catalog) == before


def test_two_upgraders_at_once_take_turns(old_catalog):
    reports = run_racers(race_upgrade, [(old_catalog,)] * 3)
    assert sorted(changed for _, changed in reports) == [False, False, True]
    assert _differences(old_catalog) == []


def test_upgrade_creates_an_empty_catalog_at_head(catalog_url):
    done = upgrade_catalog(catalog_url)
    assert (done.from_revision, done.standing_before, done.changed) == (None, SchemaStanding.EMPTY, True)
    assert _revision(catalog_url) == HEAD and _differences(catalog_url) == []


# ---- other versions ----------------------------------------------------------------------------------------------


def _stamp(url: str, revision: str) -> None:
    engine = _plain_engine(url)
    with engine.begin() as conn:
        conn.execute(sa.text(f"UPDATE {VERSION_TABLE} SET version_num = :r"), {"r": revision})
    engine.dispose()


def test_a_catalog_at_a_newer_revision_is_refused_by_opening_and_by_upgrade(catalog_url):
    Catalog(catalog_url)
    db.dispose_all()
    _stamp(catalog_url, "9999")
    before = _schema_of(catalog_url)
    with pytest.raises(CatalogSchemaMismatch, match="at schema version 9999, which this backfill_assets does not "
                                                    f"know \\(it needs {HEAD}\\): upgrade backfill_assets"):
        Catalog(catalog_url)
    with pytest.raises(CatalogSchemaMismatch, match="upgrade backfill_assets"):
        upgrade_catalog(catalog_url)
    assert schema_status(catalog_url).needs_upgrade
    assert _schema_of(catalog_url) == before and _revision(catalog_url) == "9999"


def test_a_catalog_at_an_older_revision_is_refused_naming_the_command(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/catalog.db"
    Catalog(url)
    db.dispose_all()
    # This code's head moves on (as it will with the next revision): a catalog at today's is then older.
    following = f"{int(HEAD) + 1:04d}"
    monkeypatch.setattr(schema_version, "HEAD", following)
    monkeypatch.setattr(schema_version, "known_revisions", lambda: {HEAD, following})
    with pytest.raises(CatalogSchemaMismatch) as refused:
        Catalog(url)
    assert str(refused.value) == (
        f"catalog {url} is at schema version {HEAD}, this backfill_assets needs {following}: run `{UPGRADE_COMMAND}`"
    )


def test_the_refusal_hides_a_password():
    refusal = schema_version.mismatch("postgresql://ana:secret@db.example/catalog", None, SchemaStanding.UNVERSIONED)
    assert "secret" not in str(refusal) and "postgresql://ana:***@db.example/catalog" in str(refusal)
