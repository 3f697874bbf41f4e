"""Names that reach file paths are validated; version ids round-trip; the warehouse is never escaped."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backfill_assets.engine.model.errors import InvalidInput, UnsafeName
from backfill_assets.engine.model.identity import (
    RunIdentity,
    make_version_id,
    params_digest,
    parse_version_id,
    validate_asset_name,
    validate_partition_key,
    validate_run_id,
)
from backfill_assets.engine.model.intervals import BusinessCalendar
from backfill_assets.engine.store.storage import Warehouse

VALIDATORS = [validate_asset_name, validate_partition_key, validate_run_id]

HOSTILE = [
    "..",
    "../x",
    "x/..",
    "a/b",
    "a\\b",
    "/abs",
    "\\abs",
    "a\x00b",
    "\x00",
    "a\x1fb",
    "a\nb",
    "abc\n",
    "a\rb",
    "a\tb",
    "a\x7fb",
    "a\u2028b",
    "a\u2029b",
    "a\u200bb",  # zero-width space (a format character)
    "a\u202eb",  # right-to-left override
    "",
    " ",
    ".",
    ".hidden",
    "a b",
    "\uff41",  # full-width 'a'
    "x" * 300,
]

NON_STRINGS = [None, 1, 1.5, b"raw_orders", ["a"], {"a": 1}, Path("a")]


@pytest.mark.parametrize("validate", VALIDATORS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("name", HOSTILE, ids=repr)
def test_hostile_names_are_refused(validate, name):
    if validate is validate_asset_name and name == "a/b":
        return  # an asset's key with a prefix ("berlin/daily_usage"): its own tests below
    with pytest.raises(UnsafeName):
        validate(name)


@pytest.mark.parametrize("name", ["a/../b", "a/./b", "a//b", "/a", "a/", "a/B", "a/b c", "a/\x00", "a/" + "b" * 62,
                                  "/".join("abcdefghi")])
def test_a_prefixed_asset_name_is_checked_segment_by_segment(name):
    with pytest.raises(UnsafeName):
        validate_asset_name(name)


def test_a_prefixed_asset_lives_one_directory_down_per_segment_and_its_version_id_parses_back(tmp_path):
    assert validate_asset_name("berlin/daily_usage") == "berlin/daily_usage"
    path = Warehouse(str(tmp_path)).version_dir("berlin/daily_usage", "2024-03-31", "run-1", 2)
    assert str(path).startswith(str(tmp_path / "berlin" / "daily_usage" / "date=2024-03-31"))
    version_id = make_version_id("berlin/daily_usage", "2024-03-31", "run-1", 2)
    assert parse_version_id(version_id) == ("berlin/daily_usage", "2024-03-31", "run-1", 2)


@pytest.mark.parametrize("validate", VALIDATORS, ids=lambda f: f.__name__)
@pytest.mark.parametrize("value", NON_STRINGS, ids=repr)
def test_non_string_names_are_refused(validate, value):
    with pytest.raises(UnsafeName):
        validate(value)


def test_unsafe_name_is_an_invalid_input():
    # The CLI maps InvalidInput to a one-line refusal; UnsafeName must be caught by the same handler.
    assert issubclass(UnsafeName, InvalidInput)


@pytest.mark.parametrize(
    "validate, name",
    [
        (validate_asset_name, "raw_orders"),
        (validate_asset_name, "customer_snapshot"),
        (validate_partition_key, "2022-10-01"),
        (validate_partition_key, "2022-10-01T00:00+08:00"),
        (validate_run_id, "3f2a9c4e-1b7d-4c61-9e0b-5a7f2d8c1e90"),
        (validate_run_id, "manual_run_1"),
    ],
)
def test_ordinary_names_are_accepted_unchanged(validate, name):
    assert validate(name) == name


def test_version_id_round_trips():
    version_id = make_version_id("order_facts", "2022-10-01", "3f2a9c4e-1b7d", 3)
    assert version_id == "order_facts/2022-10-01/3f2a9c4e-1b7d/3"
    assert parse_version_id(version_id) == ("order_facts", "2022-10-01", "3f2a9c4e-1b7d", 3)


@pytest.mark.parametrize("attempt", [0, -1, 1.0, "1", None, True])
def test_version_id_needs_a_positive_integer_attempt(attempt):
    with pytest.raises(UnsafeName):
        make_version_id("order_facts", "2022-10-01", "run-1", attempt)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "order_facts/2022-10-01/run-1",
        "order_facts/2022-10-01/run-1/1/extra",
        "order_facts/2022-10-01/run-1/0",
        "order_facts/2022-10-01/run-1/x",
        "order_facts/2022-10-01/run-1/-1",
        "order_facts/2022-10-01/run-1/01",  # not canonical: would alias .../1
        "order_facts/2022-10-01/run-1/\u00b2",  # superscript two: str.isdigit() but not an attempt number
        "order_facts/2022-10-01/run-1/\u0661",  # Arabic-Indic one: would alias .../1
        "order_facts/../run-1/1",
        "../2022-10-01/run-1/1",
        "order_facts/2022-10-01/../1",
        "Order_Facts/2022-10-01/run-1/1",
        None,
    ],
    ids=repr,
)
def test_malformed_version_ids_are_refused(text):
    with pytest.raises(UnsafeName):
        parse_version_id(text)


_asset_names = st.from_regex(r"\A[a-z][a-z0-9_]{0,20}\Z")
_partition_keys = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9_.:+-]{0,20}\Z").filter(lambda k: ".." not in k)
_run_ids = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9_-]{0,30}\Z")


@given(asset=_asset_names, key=_partition_keys, run_id=_run_ids, attempt=st.integers(1, 10**6))
def test_every_valid_identity_round_trips_through_its_version_id(asset, key, run_id, attempt):
    assert parse_version_id(make_version_id(asset, key, run_id, attempt)) == (asset, key, run_id, attempt)


@given(text=st.text())
def test_parse_version_id_accepts_only_canonical_ids(text):
    try:
        parts = parse_version_id(text)
    except UnsafeName:
        return
    assert make_version_id(*parts) == text


def test_params_digest_is_independent_of_key_order():
    assert params_digest({"a": 1, "b": [1, 2]}) == params_digest({"b": [1, 2], "a": 1})
    assert params_digest({"a": 1}) != params_digest({"a": 2})


def test_run_identity_refuses_hostile_run_ids():
    calendar = BusinessCalendar("Asia/Shanghai", date(2022, 9, 1))
    with pytest.raises(UnsafeName):
        RunIdentity(
            asset="raw_orders",
            interval=calendar.interval("2022-10-01"),
            logical_run_id="../../etc",
            dagster_run_id="run-1",
            request_id=None,
            code_version="cv",
            params_digest="0" * 16,
            lane="backfill",
            requested_at=None,
            started_at="2022-10-02T00:00:00+00:00",
        )


# ---- the warehouse root is never escaped ------------------------------------------------------------------------


def _inside(root: Path, path) -> bool:
    resolved_root = root.resolve()
    return resolved_root in Path(str(path)).resolve().parents


def test_version_dir_stays_inside_the_root_for_valid_names(tmp_path):
    directory = Warehouse(str(tmp_path)).version_dir("raw_orders", "2022-10-01", "run-1", 2)
    assert Path(str(directory)) == tmp_path / "raw_orders" / "date=2022-10-01" / "_runs" / "run-1" / "attempt=2"
    assert _inside(tmp_path, directory)
    assert not Path(str(directory)).exists()  # computing a location writes nothing


@pytest.mark.parametrize("key", HOSTILE + NON_STRINGS, ids=repr)
def test_version_dir_refuses_hostile_partition_keys(tmp_path, key):
    with pytest.raises(UnsafeName):
        Warehouse(str(tmp_path)).version_dir("raw_orders", key, "run-1", 1)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "asset, run_id, attempt",
    [("../raw", "run-1", 1), ("raw_orders", "..", 1), ("raw_orders", "a/b", 1), ("raw_orders", "run-1", 0)],
)
def test_version_dir_refuses_hostile_asset_run_and_attempt(tmp_path, asset, run_id, attempt):
    with pytest.raises(UnsafeName):
        Warehouse(str(tmp_path)).version_dir(asset, "2022-10-01", run_id, attempt)


def test_version_dir_refuses_a_boolean_attempt(tmp_path):
    with pytest.raises(UnsafeName):
        Warehouse(str(tmp_path)).version_dir("raw_orders", "2022-10-01", "run-1", True)


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture], max_examples=300)
@given(key=st.one_of(st.text(), st.text(alphabet="./\\\x00\n:+-_aZ09 ", max_size=12)))
def test_any_text_is_either_refused_or_stays_inside_the_warehouse(tmp_path, key):
    try:
        validated = validate_partition_key(key)
    except UnsafeName:
        return
    assert validated == key
    directory = Warehouse(str(tmp_path)).version_dir("raw_orders", validated, "run-1", 1)
    assert _inside(tmp_path, directory)
    # The key is exactly one path component under the asset folder.
    relative = Path(str(directory)).resolve().relative_to(tmp_path.resolve())
    assert relative.parts == ("raw_orders", f"date={key}", "_runs", "run-1", "attempt=1")
