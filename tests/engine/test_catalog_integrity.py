"""The catalog and the warehouse keep each other honest: a version's manifest is verified with its data file (its
digest kept in the catalog), a catalog that is not one is refused in one line naming it, an empty catalog beside a
warehouse that holds versions is refused instead of created, and a held PostgreSQL lock ends in a named error
within the catalog's lock timeout — on real SQLite files, a real PostgreSQL server and a real warehouse folder."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic import command
from sqlalchemy.engine import make_url

from backfill_assets.engine.model.errors import CatalogBusy, CatalogDamaged, CatalogEmpty, ManifestMismatch
from backfill_assets.engine.model.settings import ENV_CATALOG_LOCK_TIMEOUT
from backfill_assets.engine.store import db, schema_version
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_upgrade import init_catalog, schema_status, upgrade_catalog
from backfill_assets.engine.store.schema import versions
from backfill_assets.engine.store.schema_version import SchemaStanding
from backfill_assets.engine.store.storage import MANIFEST_FILE, Warehouse
from tests.corruption import CATALOG_DAMAGE as DAMAGE

from .catalog_helpers import PASSED, identity, table_locked
from .test_storage import labels, revenue_frame

# ---- the manifest, verified with the data file ---------------------------------------------------------------------


def _publish_written(catalog: Catalog, warehouse: Warehouse, run_id: str = "run-1") -> str:
    """A version written to the warehouse, its digests kept by the catalog, and published (as the gate does)."""
    version = catalog.begin_version(identity(run_id=run_id))
    directory = warehouse.version_dir(version.asset, version.partition_key, run_id, version.attempt_no)
    written = warehouse.write(directory, revenue_frame(), labels(run_id), {"version_id": version.version_id})
    catalog.mark_verifying(version.version_id, path=written.path, rows=written.rows, sha256=written.sha256,
                           stats=written.stats, input_versions={}, manifest_sha256=written.manifest_sha256)
    catalog.publish(version.version_id, PASSED)
    return version.version_id


@pytest.fixture
def stores(catalog_url, tmp_path) -> tuple[Catalog, Warehouse]:
    return Catalog(catalog_url), Warehouse(str(tmp_path / "warehouse"))


def _manifest_of(catalog: Catalog, version_id: str) -> Path:
    return Path(catalog.get(version_id).path).parent / MANIFEST_FILE


def _rows_changed(text: str) -> str:
    return text.replace('"rows": 3', '"rows": 4')


def _sha_forged(text: str) -> str:
    manifest = json.loads(text)
    manifest["sha256"] = "f" * 64
    return json.dumps(manifest, indent=2)


def _identity_forged(text: str) -> str:
    manifest = json.loads(text)
    manifest["version_id"] = "order_facts/2022-10-01/forged-run/1"
    return json.dumps(manifest, indent=2)


def _truncated(text: str) -> str:
    return text[: len(text) // 2]


def _whitespace(text: str) -> str:
    return text + "\n"  # the same JSON, other bytes: the digest is of what was written


TAMPERINGS = {
    "rows changed": (_rows_changed, "rows '4' (catalog '3')"),
    "sha256 forged": (_sha_forged, "sha256 'ffff"),
    "identity forged": (_identity_forged, "version_id 'order_facts/2022-10-01/"),
    "truncated": (_truncated, "it is not valid JSON"),
    "whitespace added": (_whitespace, "its content differs"),
}


@pytest.mark.parametrize("how", list(TAMPERINGS))
def test_a_tampered_manifest_is_refused_naming_the_version_the_manifest_and_what_differs(stores, how):
    catalog, warehouse = stores
    version_id = _publish_written(catalog, warehouse)
    version = catalog.current("order_facts", "2022-10-01")
    assert version.manifest_sha256 and len(warehouse.read_version(version)) == 3  # intact: it reads
    manifest = _manifest_of(catalog, version_id)
    alter, says = TAMPERINGS[how]
    manifest.write_text(alter(manifest.read_text()))
    with pytest.raises(ManifestMismatch) as refused:
        warehouse.read_version(version)
    message = str(refused.value)
    assert f"version {version_id}: its manifest {manifest}" in message and says in message, message
    assert "\n" not in message


def test_a_deleted_manifest_is_refused_naming_the_version(stores):
    catalog, warehouse = stores
    version_id = _publish_written(catalog, warehouse)
    _manifest_of(catalog, version_id).unlink()
    with pytest.raises(ManifestMismatch, match=f"version {version_id}: its manifest .* is missing"):
        warehouse.verify_version(catalog.current("order_facts", "2022-10-01"))


def test_a_version_written_before_manifest_digests_were_kept_is_verified_by_its_data_file(stores):
    """NULL digest (published before revision 0005): the data file is verified as before, the manifest not."""
    catalog, warehouse = stores
    version_id = _publish_written(catalog, warehouse)
    with catalog.engine.begin() as conn:
        conn.execute(sa.update(versions).where(versions.c.version_id == version_id).values(manifest_sha256=None))
    version = catalog.current("order_facts", "2022-10-01")
    _manifest_of(catalog, version_id).write_text("{}")
    assert version.manifest_sha256 is None and len(warehouse.read_version(version)) == 3


# ---- revision 0005 --------------------------------------------------------------------------------------------------


def test_revision_0005_adds_the_manifest_digest_and_its_downgrade_removes_it(catalog_url, tmp_path):
    catalog, warehouse = Catalog(catalog_url), Warehouse(str(tmp_path / "warehouse"))
    version_id = _publish_written(catalog, warehouse)
    db.dispose_all()
    engine = sa.create_engine(catalog_url, poolclass=sa.pool.NullPool)
    try:
        with engine.begin() as conn:
            command.downgrade(schema_version.alembic_config(conn), "0004")
        columns = {c["name"] for c in sa.inspect(engine).get_columns("versions")}
        assert "manifest_sha256" not in columns and schema_status(catalog_url).revision == "0004"
        assert upgrade_catalog(catalog_url).from_revision == "0004"
        columns = {c["name"] for c in sa.inspect(engine).get_columns("versions")}
        assert "manifest_sha256" in columns
    finally:
        engine.dispose()
    version = Catalog(catalog_url).get(version_id)
    assert version.manifest_sha256 is None and len(warehouse.read_version(version)) == 3  # kept, data verified


# ---- a catalog that is not one ------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", list(DAMAGE))
def test_a_damaged_catalog_is_one_error_naming_it_and_what_to_do(tmp_path, kind):
    path = tmp_path / "catalog.db"
    damage, says = DAMAGE[kind]
    damage(path)
    url = f"sqlite:///{path}"
    with pytest.raises(CatalogDamaged) as refused:
        catalog = Catalog(url)
        catalog.current("order_facts", "2022-10-01")  # damaged pages: the table's own page is read here
    message = str(refused.value)
    assert str(path) in message and says in message and "restore it from a backup" in message, message
    assert "\n" not in message
    with pytest.raises(CatalogDamaged):
        schema_status(url)  # `catalog version` too: never "up to date"


def test_a_catalog_missing_a_table_on_postgresql_is_refused(catalog_url):
    Catalog(catalog_url)
    db.dispose_all()
    engine = sa.create_engine(catalog_url, poolclass=sa.pool.NullPool)
    with engine.begin() as conn:
        conn.exec_driver_sql("DROP TABLE reads")
    engine.dispose()
    with pytest.raises(CatalogDamaged, match=r"lacks its table\(s\) reads: restore it from a backup"):
        Catalog(catalog_url)
    with pytest.raises(CatalogDamaged):
        schema_status(catalog_url)


# ---- an empty catalog beside a warehouse with versions -------------------------------------------------------------


def _warehouse_with_a_version(tmp_path: Path) -> str:
    catalog, warehouse = Catalog(f"sqlite:///{tmp_path}/first.db"), Warehouse(str(tmp_path / "warehouse"))
    _publish_written(catalog, warehouse)
    return str(tmp_path / "warehouse")


@pytest.mark.parametrize("state", ["zero-length", "missing"])
def test_an_empty_catalog_beside_a_warehouse_with_versions_is_refused_not_created(tmp_path, state):
    root = _warehouse_with_a_version(tmp_path)
    path = tmp_path / "catalog.db"
    if state == "zero-length":
        path.touch()
    url = f"sqlite:///{path}"
    with pytest.raises(CatalogEmpty) as refused:
        Catalog(url, root)
    message = str(refused.value)
    assert str(path) in message and root in message and "catalog init --force" in message, message
    assert (path.stat().st_size == 0) if state == "zero-length" else not path.exists()  # nothing created
    with pytest.raises(CatalogEmpty):
        schema_status(url, root)
    with pytest.raises(CatalogEmpty):
        upgrade_catalog(url, root)
    with pytest.raises(CatalogEmpty):
        init_catalog(url, root)
    # Starting over is a decision: init --force creates it at head, and it opens.
    assert init_catalog(url, root, force=True).to_revision == schema_version.HEAD
    assert Catalog(url, root).current("order_facts", "2022-10-01") is None


def test_an_empty_catalog_beside_a_warehouse_with_versions_is_refused_on_every_backend(catalog_url, tmp_path):
    root = _warehouse_with_a_version(tmp_path)
    with pytest.raises(CatalogEmpty, match="holds versions"):
        Catalog(catalog_url, root)
    assert schema_status(catalog_url).standing in (SchemaStanding.EMPTY, SchemaStanding.ABSENT)  # nothing created


def test_a_new_home_with_an_empty_warehouse_creates_its_catalog_silently(catalog_url, tmp_path):
    (tmp_path / "warehouse" / "order_facts").mkdir(parents=True)  # a folder, no version
    Catalog(catalog_url, str(tmp_path / "warehouse"))
    assert schema_status(catalog_url).standing == SchemaStanding.AT_HEAD


def test_init_refuses_a_catalog_that_already_has_tables(catalog_url):
    Catalog(catalog_url)
    with pytest.raises(Exception, match="already exists .*nothing changed"):
        init_catalog(catalog_url, force=True)


# ---- a held lock ----------------------------------------------------------------------------------------------------


@pytest.mark.postgres
def test_a_held_postgresql_lock_ends_in_a_named_error_within_the_lock_timeout(catalog_url, monkeypatch):
    if not catalog_url.startswith("postgresql"):
        pytest.skip("PostgreSQL's lock_timeout")
    Catalog(catalog_url)
    db.dispose_all()
    monkeypatch.setenv(ENV_CATALOG_LOCK_TIMEOUT, "1")
    with table_locked(catalog_url):
        catalog = Catalog(catalog_url)
        started = time.monotonic()
        with pytest.raises(CatalogBusy) as refused:
            catalog.current("order_facts", "2022-10-01")
        assert time.monotonic() - started < 5
    message = str(refused.value)
    shown = make_url(catalog_url).render_as_string(hide_password=True)
    assert f"catalog {shown}: lock held by another session" in message and "lock_timeout (1 s" in message
    assert "pg_stat_activity" in message and "\n" not in message


def test_sqlite_catalogs_wait_for_a_lock_and_name_it_when_it_is_not_released(tmp_path):
    import sqlite3

    url = f"sqlite:///{tmp_path}/catalog.db"
    engine = Catalog(url).engine
    with engine.connect() as conn:
        assert conn.exec_driver_sql("PRAGMA busy_timeout").scalar_one() == db.SQLITE_BUSY_SECONDS * 1000
    named = db.catalog_error(url, sqlite3.OperationalError("database is locked"))
    assert isinstance(named, CatalogBusy) and f"catalog {url}: database is locked" in str(named)
