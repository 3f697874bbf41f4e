"""The blocking audits: each injected defect fails the check made to catch it; a clean frame passes all five."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pandas as pd
import pytest

from backfill_assets.engine.model.identity import RunIdentity, params_digest
from backfill_assets.engine.model.intervals import BusinessCalendar
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.wap.audit import (
    CHECK_BUSINESS_TOTALS,
    CHECK_FILE_INTEGRITY,
    CHECK_PRIMARY_KEY,
    CHECK_ROW_COUNT,
    CHECK_SCHEMA,
    check_names,
    check_primary_key,
    check_schema,
    run_audits,
)
from backfill_assets.examples.orders import transforms
from backfill_assets.examples.orders.definitions import FxRates
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS
from backfill_assets.integration.defects import Defect, spoil
from tests.orders import GRAPH

CALENDAR = BusinessCalendar("Asia/Shanghai", date(2022, 9, 1))
ALL_CHECKS = (CHECK_ROW_COUNT, CHECK_PRIMARY_KEY, CHECK_BUSINESS_TOTALS, CHECK_SCHEMA, CHECK_FILE_INTEGRITY)
KEY = "2022-10-02"


def raw_orders() -> pd.DataFrame:
    """Twelve source rows for eleven orders: o-03 was amended (the later amendment must win)."""
    created = pd.date_range("2022-10-01T16:05:00Z", periods=11, freq="37min")
    rows = []
    regions = ["north", "south", "east", "west"]
    currencies = ["CNY", "USD", "EUR", "CNY"]
    for i, ts in enumerate(created):
        rows.append(
            dict(
                order_id=f"o-{i:02d}",
                customer_id=f"c-{i % 5:02d}",
                region=regions[i % 4],
                amount=10.0 + 7.5 * i,
                currency=currencies[i % 4],
                created_at=ts,
                updated_at=ts,
            )
        )
    amended = dict(rows[3])
    amended.update(amount=rows[3]["amount"] * 0.9, updated_at=rows[3]["updated_at"] + pd.Timedelta(minutes=30))
    rows.append(amended)
    frame = pd.DataFrame(rows)
    for col in ("order_id", "customer_id", "region", "currency"):
        frame[col] = frame[col].astype("string")
    return frame


def clean_output(asset: str):
    """The transform's frame for ``asset`` and what its audits are given (the interval and the inputs)."""
    raw = raw_orders()
    facts = transforms.order_facts(raw, KEY)
    interval = CALENDAR.interval(KEY)
    if asset == ORDER_FACTS:
        return facts, {"interval": interval, "raw_orders": raw, "config": FxRates()}  # the default rates
    if asset == DAILY_REVENUE:
        return transforms.daily_revenue(facts, KEY), {"interval": interval, "order_facts": facts}
    if asset == CUSTOMER_SNAPSHOT:
        frame = transforms.customer_snapshot(transforms.empty_snapshot(), facts, KEY)
        return frame, {"interval": interval, "order_facts": facts, "previous": None}
    raise AssertionError(asset)


def identity_labels(asset: str) -> dict[str, str]:
    return RunIdentity(
        asset=asset,
        interval=CALENDAR.interval(KEY),
        logical_run_id="run-1",
        dagster_run_id="run-1",
        request_id=None,
        code_version="git-abc123",
        params_digest=params_digest({}),
        lane="backfill",
        requested_at=None,
        started_at="2022-11-01T00:00:00.000000+00:00",
    ).labels(1)


CORRUPT_FILE = "corrupt_file"  # not a frame's defect: the bytes on disk halved after the write
DROP_ROWS, DUPLICATE_KEYS, BAD_SCHEMA = Defect.drop_rows, Defect.duplicate_keys, Defect.bad_schema


def run_audit(tmp_path, asset: str, defect: Defect | str | None = None) -> dict[str, bool]:
    spec = GRAPH[asset]
    frame, expected = clean_output(asset)
    frame = spoil(frame, None if defect == CORRUPT_FILE else defect, spec.schema)
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    labels = identity_labels(asset)
    written = warehouse.write(
        warehouse.version_dir(asset, KEY, "run-1", 1),
        frame,
        labels,
        {"version_id": f"{asset}/{KEY}/run-1/1"},
    )
    if defect == CORRUPT_FILE:
        data = Path(written.path)
        data.write_bytes(data.read_bytes()[: data.stat().st_size // 2])
    outcomes = run_audits(spec, frame, expected, written, warehouse, labels)
    assert [o.name for o in outcomes] == [name for name, _ in check_names(spec)] == list(ALL_CHECKS)
    return {o.name: o.passed for o in outcomes}


def test_the_hand_built_source_exercises_the_dedupe():
    raw = raw_orders()
    facts = transforms.order_facts(raw, KEY)
    assert len(raw) == 12 and len(facts) == 11
    amended = facts.set_index("order_id").loc["o-03", "amount_cny"]
    assert amended == pytest.approx(32.5 * 0.9)  # o-03 (CNY, 32.50) was amended to 90 %: the amendment won


@pytest.mark.parametrize("asset", [ORDER_FACTS, DAILY_REVENUE, CUSTOMER_SNAPSHOT])
def test_a_clean_frame_passes_all_five_checks(tmp_path, asset):
    assert run_audit(tmp_path, asset) == {name: True for name in ALL_CHECKS}


@pytest.mark.parametrize("asset", [ORDER_FACTS, DAILY_REVENUE])
@pytest.mark.parametrize(
    "defect, check",
    [
        (DROP_ROWS, CHECK_ROW_COUNT),
        (DUPLICATE_KEYS, CHECK_PRIMARY_KEY),
        (BAD_SCHEMA, CHECK_SCHEMA),
        (CORRUPT_FILE, CHECK_FILE_INTEGRITY),
    ],
)
def test_each_defect_fails_the_check_that_guards_against_it(tmp_path, asset, defect, check):
    results = run_audit(tmp_path, asset, defect)
    assert results[check] is False, results
    if defect != CORRUPT_FILE:
        # The defect is in the content; the file on disk still matches its manifest.
        assert results[CHECK_FILE_INTEGRITY] is True
    else:
        # The frame itself is clean; only the bytes on disk are wrong.
        assert {name for name, ok in results.items() if not ok} == {CHECK_FILE_INTEGRITY}


def test_dropped_rows_also_break_the_business_totals(tmp_path):
    results = run_audit(tmp_path, ORDER_FACTS, DROP_ROWS)
    assert results[CHECK_BUSINESS_TOTALS] is False


def test_duplicate_keys_are_counted():
    spec = GRAPH[ORDER_FACTS]
    frame, _ = clean_output(ORDER_FACTS)
    outcome = check_primary_key(spoil(frame, DUPLICATE_KEYS, spec.schema), spec.primary_key)
    assert not outcome.passed
    assert outcome.metadata["duplicates"] == 3


def test_schema_check_names_the_drifted_column():
    spec = GRAPH[ORDER_FACTS]
    frame, _ = clean_output(ORDER_FACTS)
    outcome = check_schema(spoil(frame, BAD_SCHEMA, spec.schema), spec.schema)
    assert not outcome.passed
    assert "amount_cny" in outcome.description


def test_file_integrity_fails_when_the_identity_metadata_differs(tmp_path):
    spec = GRAPH[ORDER_FACTS]
    frame, expected = clean_output(ORDER_FACTS)
    warehouse = Warehouse(str(tmp_path / "warehouse"))
    labels = identity_labels(ORDER_FACTS)
    written = warehouse.write(warehouse.version_dir(ORDER_FACTS, KEY, "run-1", 1), frame, labels, {})
    other = {**labels, "run_id": "run-2"}
    results = {o.name: o.passed for o in run_audits(spec, frame, expected, written, warehouse, other)}
    assert results[CHECK_FILE_INTEGRITY] is False


def test_no_defect_leaves_the_frame_untouched():
    frame, _ = clean_output(ORDER_FACTS)
    pd.testing.assert_frame_equal(spoil(frame, None, GRAPH[ORDER_FACTS].schema), frame)
