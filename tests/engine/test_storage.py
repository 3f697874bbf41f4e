"""The warehouse: isolated, write-once version locations with a manifest that the bytes must match."""

from __future__ import annotations

import gc
import hashlib
import json
import warnings
from datetime import date

import pandas as pd
import pyarrow.parquet as pq
import pytest
from upath import UPath

from backfill_assets.engine.model.errors import IntegrityError, UnsafeName
from backfill_assets.engine.model.identity import RunIdentity, params_digest
from backfill_assets.engine.model.intervals import BusinessCalendar
from backfill_assets.engine.store.parquet_files import IDENTITY_METADATA_KEY
from backfill_assets.engine.store.storage import DATA_FILE, MANIFEST_FILE, Warehouse

CALENDAR = BusinessCalendar("Asia/Shanghai", date(2022, 9, 1))
KEY = "2022-10-01"


def labels(run_id: str = "run-1", attempt_no: int = 1) -> dict[str, str]:
    identity = RunIdentity(
        asset="daily_revenue",
        interval=CALENDAR.interval(KEY),
        logical_run_id=run_id,
        dagster_run_id=run_id,
        request_id="req-20221101-0000abcd",
        code_version="git-abc123",
        params_digest=params_digest({}),
        lane="backfill",
        requested_at="2022-11-01T00:00:00.000000+00:00",
        started_at="2022-11-01T00:00:01.000000+00:00",
    )
    return identity.labels(attempt_no)


def revenue_frame(scale: float = 1.0) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "business_date": pd.Series([KEY] * 3, dtype="string"),
            "region": pd.Series(["east", "north", "south"], dtype="string"),
            "orders": pd.Series([3, 5, 8], dtype="int64"),
            "revenue_cny": pd.Series([10.5, 20.25, 30.0], dtype="float64") * scale,
        }
    )


@pytest.fixture(params=["local", "s3"])
def warehouse_root(request, tmp_path) -> str:
    """Every test runs on a local folder and on a real S3 server on loopback (tests/s3.py)."""
    if request.param == "local":
        return str(tmp_path / "warehouse")
    return request.getfixturevalue("s3_server").new_root()


@pytest.fixture
def warehouse(warehouse_root) -> Warehouse:
    return Warehouse(warehouse_root)


def write(warehouse: Warehouse, frame=None, attempt_no: int = 1, **kwargs):
    directory = warehouse.version_dir("daily_revenue", KEY, "run-1", attempt_no)
    return warehouse.write(
        directory,
        revenue_frame() if frame is None else frame,
        labels(attempt_no=attempt_no),
        {"version_id": f"daily_revenue/{KEY}/run-1/{attempt_no}", "input_versions": {}},
        **kwargs,
    )


def test_write_creates_data_and_manifest_in_the_version_location(warehouse_root, warehouse):
    written = write(warehouse, attempt_no=2)
    expected_dir = UPath(warehouse_root) / "daily_revenue" / f"date={KEY}" / "_runs" / "run-1" / "attempt=2"
    assert written.path == str(expected_dir / DATA_FILE)
    assert sorted(p.name for p in expected_dir.iterdir()) == sorted([DATA_FILE, MANIFEST_FILE])
    assert written.rows == 3


def test_manifest_records_the_sha256_rows_schema_stats_and_identity(warehouse):
    written = write(warehouse)
    payload = UPath(written.path).read_bytes()
    manifest = json.loads((UPath(written.path).parent / MANIFEST_FILE).read_text())
    assert manifest["sha256"] == hashlib.sha256(payload).hexdigest() == written.sha256
    assert manifest["bytes"] == len(payload)
    assert manifest["rows"] == 3
    assert manifest["schema"] == {
        "business_date": "string",
        "region": "string",
        "orders": "int64",
        "revenue_cny": "float64",
    }
    assert manifest["stats"]["orders"] == {"nulls": 0, "min": 3, "max": 8, "sum": 16}
    assert manifest["identity"] == labels()
    assert manifest["version_id"] == f"daily_revenue/{KEY}/run-1/1"
    assert warehouse.read_manifest(written.path) == manifest


def test_identity_labels_are_in_the_parquet_key_value_metadata(warehouse):
    written = write(warehouse)
    identity = warehouse.read_identity(written.path)
    assert identity == labels()
    assert identity["logical_run_id"] == "run-1"
    assert identity["attempt_no"] == "1"
    assert identity["interval_start"] == "2022-09-30T16:00:00.000000+00:00"
    # Readable by any Parquet tool, not only through Warehouse.
    with UPath(written.path).open("rb") as fh:
        raw = pq.read_schema(fh).metadata[IDENTITY_METADATA_KEY]
    assert json.loads(raw) == labels()


def test_read_verified_returns_the_written_frame(warehouse):
    written = write(warehouse)
    frame = warehouse.read_verified(written.path, written.sha256, written.rows)
    pd.testing.assert_frame_equal(frame, revenue_frame(), check_dtype=False)
    assert list(frame["orders"]) == [3, 5, 8]


def test_writing_the_same_location_twice_is_refused_and_keeps_the_first_file(warehouse):
    first = write(warehouse)
    data_before = UPath(first.path).read_bytes()
    manifest_before = (UPath(first.path).parent / MANIFEST_FILE).read_bytes()
    with pytest.raises(IntegrityError, match="already exists"):
        write(warehouse, frame=revenue_frame(scale=2.0))
    assert UPath(first.path).read_bytes() == data_before
    assert (UPath(first.path).parent / MANIFEST_FILE).read_bytes() == manifest_before
    assert warehouse.read_verified(first.path, first.sha256, 3)["revenue_cny"].sum() == pytest.approx(60.75)


def test_a_new_attempt_gets_its_own_location(warehouse):
    first = write(warehouse, attempt_no=1)
    second = write(warehouse, frame=revenue_frame(scale=2.0), attempt_no=2)
    assert first.path != second.path
    assert first.sha256 != second.sha256
    assert warehouse.read_verified(first.path, first.sha256)["revenue_cny"].sum() == pytest.approx(60.75)


def test_read_verified_refuses_a_file_with_one_flipped_byte(warehouse):
    written = write(warehouse)
    path = UPath(written.path)
    payload = bytearray(path.read_bytes())
    payload[len(payload) // 2] ^= 0x01
    path.write_bytes(bytes(payload))
    with pytest.raises(IntegrityError, match="sha256"):
        warehouse.read_verified(written.path, written.sha256, written.rows)


def test_read_verified_refuses_a_row_count_that_differs_from_the_catalog(warehouse):
    written = write(warehouse)
    with pytest.raises(IntegrityError, match="rows"):
        warehouse.read_verified(written.path, written.sha256, rows=4)


def test_read_verified_reports_a_missing_file_as_an_integrity_error(warehouse):
    written = write(warehouse)
    UPath(written.path).unlink()
    with pytest.raises(IntegrityError, match="missing"):
        warehouse.read_verified(written.path, written.sha256)


def test_a_file_damaged_after_its_write_differs_from_its_manifest_and_is_refused(warehouse):
    written = write(warehouse)
    damaged = UPath(written.path)
    damaged.write_bytes(damaged.read_bytes()[: len(damaged.read_bytes()) // 2])
    on_disk = hashlib.sha256(UPath(written.path).read_bytes()).hexdigest()
    manifest = warehouse.read_manifest(written.path)
    assert manifest["sha256"] == written.sha256
    assert on_disk != manifest["sha256"]
    with pytest.raises(IntegrityError):
        warehouse.read_verified(written.path, manifest["sha256"], manifest["rows"])


def test_reads_outside_the_root_are_refused(warehouse_root, warehouse):
    outside = UPath(warehouse_root).parent / f"{UPath(warehouse_root).name}-elsewhere" / DATA_FILE
    outside.parent.mkdir(parents=True, exist_ok=True)
    outside.write_bytes(b"not yours")
    traversal = f"{warehouse_root}/daily_revenue/../../{outside.parent.name}/{DATA_FILE}"
    for path in (str(outside), traversal):
        with pytest.raises(UnsafeName):
            warehouse.read_bytes(path)
        with pytest.raises(UnsafeName):
            warehouse.read_manifest(path)
        with pytest.raises(UnsafeName):
            warehouse.remove_version(path)
    assert outside.read_bytes() == b"not yours"


def test_a_symlink_inside_the_root_leading_out_of_it_is_refused(tmp_path):
    root = tmp_path / "warehouse"
    outside = tmp_path / "elsewhere"
    (outside / "attempt=1").mkdir(parents=True)
    (outside / "attempt=1" / DATA_FILE).write_bytes(b"not yours")
    (root / "daily_revenue" / f"date={KEY}" / "_runs").mkdir(parents=True)
    (root / "daily_revenue" / f"date={KEY}" / "_runs" / "run-1").symlink_to(outside)
    warehouse = Warehouse(str(root))
    with pytest.raises(UnsafeName):
        warehouse.version_dir("daily_revenue", KEY, "run-1", 1)
    with pytest.raises(UnsafeName):
        warehouse.read_bytes(str(root / "daily_revenue" / f"date={KEY}" / "_runs" / "run-1" / "attempt=1" / DATA_FILE))
    # A root that is itself a symlink is the warehouse: what lies below it is inside.
    linked = tmp_path / "linked-root"
    linked.symlink_to(tmp_path / "other-warehouse", target_is_directory=True)
    (tmp_path / "other-warehouse").mkdir()
    written = write(Warehouse(str(linked)))
    assert Warehouse(str(linked)).read_bytes(written.path)


def test_read_identity_closes_the_file_it_opens(warehouse):
    written = write(warehouse)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", ResourceWarning)
        assert warehouse.read_identity(written.path) == labels()
        gc.collect()
    assert [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)] == []


def test_remove_version_deletes_both_objects_and_leaves_other_attempts(warehouse):
    first = write(warehouse, attempt_no=1)
    second = write(warehouse, frame=revenue_frame(scale=2.0), attempt_no=2)
    warehouse.remove_version(first.path)
    assert not UPath(first.path).exists()
    assert not (UPath(first.path).parent / MANIFEST_FILE).exists()
    assert warehouse.read_verified(second.path, second.sha256, 3)["revenue_cny"].sum() == pytest.approx(121.5)
    with pytest.raises(IntegrityError, match="missing"):
        warehouse.read_verified(first.path, first.sha256)
