"""Blocking audits of a written (not yet published) version (docs/ARCHITECTURE.md, "write–audit–publish").

An ``Audit`` is a named check of one written frame. The built-ins cover the usual contracts (row count against an
expectation the asset supplies, primary-key uniqueness, declared schema, totals against the upstream interval,
non-empty); any plain function returning pass/fail becomes one with ``audit``. File integrity (sha256, rows and
identity re-read from storage) is not optional: the gate always runs it last. None of them raises on bad data.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, overload

import numpy as np
import pandas as pd

from backfill_assets.engine.model.errors import IntegrityError, InvalidInput
from backfill_assets.engine.model.graph import FRAME_ARG, DeclaredAsset, call_with, parameter_names
from backfill_assets.engine.model.schemas import logical_schema
from backfill_assets.engine.store.parquet_files import IDENTITY_METADATA_KEY, parquet_footer
from backfill_assets.engine.store.storage import Warehouse, WrittenVersion

CHECK_ROW_COUNT = "row_count"
CHECK_PRIMARY_KEY = "primary_key_unique"
CHECK_BUSINESS_TOTALS = "business_totals"
CHECK_SCHEMA = "schema_matches"
CHECK_NOT_EMPTY = "not_empty"
CHECK_FILE_INTEGRITY = "file_integrity"
FILE_INTEGRITY_DESCRIPTION = "Re-read from storage: sha256, row count and identity match the manifest."


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "description": self.description, **self.metadata}


@dataclass(frozen=True)
class AuditResult:
    """What a user audit may return (a bare bool, or ``(bool, metadata)``, work too)."""

    passed: bool
    description: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)


Evaluate = Callable[[pd.DataFrame, Mapping[str, Any], DeclaredAsset], CheckOutcome]


@dataclass(frozen=True)
class Audit:
    """One blocking check: ``evaluate(frame, available, spec)``, where ``available`` holds what the transform
    was given (the interval, the upstream frames, ``previous``, resources)."""

    name: str
    description: str
    evaluate: Evaluate
    needs: tuple[str, ...] = ()  # parameter names of the user functions inside (resources among them)


@overload
def audit(fn: Callable[..., Any], *, name: str | None = None, description: str | None = None) -> Audit: ...


@overload
def audit(
    fn: None = None, *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], Audit]: ...


def audit(
    fn: Callable[..., Any] | None = None, *, name: str | None = None, description: str | None = None
) -> Audit | Callable[[Callable[..., Any]], Audit]:
    """Turn a plain function into a blocking audit. It takes ``frame`` plus any of ``interval``, the upstream
    assets, ``previous`` and resources, by name, and returns a bool, ``(bool, metadata)`` or ``AuditResult``.
    Usable bare (``@audit``) or with a name and description."""

    def wrap(user_fn: Callable[..., Any]) -> Audit:
        check_name = name or user_fn.__name__
        text = description or (user_fn.__doc__ or check_name).strip().splitlines()[0]

        def evaluate(frame: pd.DataFrame, available: Mapping[str, Any], spec: DeclaredAsset) -> CheckOutcome:
            result = call_with(user_fn, {**available, FRAME_ARG: frame}, f"audit {check_name} of {spec.name}")
            return _outcome(check_name, result)

        return Audit(check_name, text, evaluate, parameter_names(user_fn))

    return wrap(fn) if fn is not None else wrap


def _outcome(name: str, result: Any) -> CheckOutcome:
    if isinstance(result, CheckOutcome):
        return result
    if isinstance(result, AuditResult):
        return CheckOutcome(name, bool(result.passed), result.description or _verdict(result.passed),
                            dict(result.metadata))
    if isinstance(result, tuple) and len(result) == 2 and isinstance(result[1], dict):
        return CheckOutcome(name, bool(result[0]), _verdict(result[0]), dict(result[1]))
    if isinstance(result, bool):
        return CheckOutcome(name, result, _verdict(result))
    raise InvalidInput(f"audit {name} returned {type(result).__name__}; return a bool, (bool, dict) or AuditResult")


def _verdict(passed: object) -> str:
    return "passed" if passed else "failed"


def _resolve(value: Any, available: Mapping[str, Any], what: str) -> Any:
    return call_with(value, available, what) if callable(value) else value


def row_count(expected: Callable[..., int] | int) -> Audit:
    """Rows equal an expectation computed independently of the transform (a source count, an upstream's keys)."""

    def evaluate(frame: pd.DataFrame, available: Mapping[str, Any], spec: DeclaredAsset) -> CheckOutcome:
        want = int(_resolve(expected, available, f"row_count expectation of {spec.name}"))
        return check_row_count(frame, want)

    return Audit(CHECK_ROW_COUNT, "Rows equal the independently computed expectation (the source count for "
                 "extracts).", evaluate, parameter_names(expected if callable(expected) else None))


def unique_key(*columns: str) -> Audit:
    """No duplicate keys; without columns, the asset's declared ``primary_key``."""

    def evaluate(frame: pd.DataFrame, available: Mapping[str, Any], spec: DeclaredAsset) -> CheckOutcome:
        return check_primary_key(frame, tuple(columns) or tuple(spec.primary_key))

    return Audit(CHECK_PRIMARY_KEY, "No duplicate primary keys.", evaluate)


def matches_schema(declared: Mapping[str, str] | None = None) -> Audit:
    """Columns and logical types equal ``declared`` (default: the asset's declared ``schema``)."""

    def evaluate(frame: pd.DataFrame, available: Mapping[str, Any], spec: DeclaredAsset) -> CheckOutcome:
        return check_schema(frame, dict(declared if declared is not None else spec.schema))

    return Audit(CHECK_SCHEMA, "Columns and logical types equal the declared schema.", evaluate)


def totals_match(expected: Callable[..., Mapping[str, float]], tolerance: Callable[..., float] | float = 0.01) -> Audit:
    """Column sums agree with totals computed from the upstream interval, within ``tolerance``."""

    def evaluate(frame: pd.DataFrame, available: Mapping[str, Any], spec: DeclaredAsset) -> CheckOutcome:
        totals = dict(call_with(expected, available, f"totals_match expectation of {spec.name}"))
        return check_business_totals(frame, totals, float(_resolve(tolerance, available, "totals_match tolerance")))

    needs = parameter_names(expected) + parameter_names(tolerance if callable(tolerance) else None)
    return Audit(CHECK_BUSINESS_TOTALS, "Amounts agree with the upstream interval.", evaluate, needs)


def not_empty() -> Audit:
    def evaluate(frame: pd.DataFrame, available: Mapping[str, Any], spec: DeclaredAsset) -> CheckOutcome:
        return CheckOutcome(CHECK_NOT_EMPTY, len(frame) > 0, f"{len(frame)} rows", {"rows": len(frame)})

    return Audit(CHECK_NOT_EMPTY, "At least one row.", evaluate)


def run_audits(
    spec: DeclaredAsset,
    frame: pd.DataFrame,
    available: Mapping[str, Any],
    written: WrittenVersion,
    warehouse: Warehouse,
    identity_labels: dict[str, str],
) -> list[CheckOutcome]:
    outcomes = []
    for check in spec.audits:
        try:
            outcomes.append(check.evaluate(frame, available, spec))
        except InvalidInput:
            raise  # a mistake in the asset's declaration, not a verdict on the data
        except Exception as exc:  # noqa: BLE001 - an audit that crashes on the data fails, it does not pass
            outcomes.append(CheckOutcome(check.name, False, f"audit raised {type(exc).__name__}: {exc}"[:500]))
    outcomes.append(check_file_integrity(written, warehouse, identity_labels))
    return outcomes


def check_row_count(frame: pd.DataFrame, expected_rows: int) -> CheckOutcome:
    rows = len(frame)
    passed = rows == expected_rows
    return CheckOutcome(
        CHECK_ROW_COUNT,
        passed,
        f"{rows} rows" + ("" if passed else f", expected {expected_rows}"),
        {"rows": rows, "expected_rows": expected_rows},
    )


def check_primary_key(frame: pd.DataFrame, key: tuple[str, ...]) -> CheckOutcome:
    missing = [c for c in key if c not in frame.columns]
    if missing or not key:
        return CheckOutcome(CHECK_PRIMARY_KEY, False, f"key columns missing: {missing or 'none declared'}",
                            {"key": list(key)})
    duplicated = int(frame.duplicated(subset=list(key)).sum())
    return CheckOutcome(
        CHECK_PRIMARY_KEY,
        duplicated == 0,
        "no duplicate keys" if duplicated == 0 else f"{duplicated} duplicate key(s) on {list(key)}",
        {"duplicates": duplicated, "key": ",".join(key)},
    )


def check_business_totals(frame: pd.DataFrame, totals: Mapping[str, float], tolerance: float) -> CheckOutcome:
    """Each column's sum within ``tolerance`` of its expected total. Fails, never passes, on what cannot be
    compared: a non-finite sum, expectation or tolerance (``inf - inf`` is NaN, and ``NaN > tolerance`` is False),
    and an infinite value in a compared column."""
    problems: list[str] = []
    observed: dict[str, Any] = {}
    if not _finite(tolerance) or tolerance < 0:
        problems.append(f"tolerance {tolerance!r} is not a finite number of at least 0")
    for column, want in totals.items():
        if column not in frame.columns:
            problems.append(f"{column} missing")
            continue
        if not pd.api.types.is_numeric_dtype(frame[column]):
            problems.append(f"{column} is not numeric")
            continue
        with np.errstate(invalid="ignore", over="ignore"):  # inf + -inf, or an overflowing sum: judged below
            got = float(frame[column].sum())
        observed[f"total_{column}"] = _shown(got)
        observed[f"expected_{column}"] = _shown(want)
        infinite = _infinite_values(frame[column])
        if infinite:
            problems.append(f"{column} holds {infinite} infinite value(s)")
        elif not (_finite(got) and _finite(want)):
            problems.append(f"{column} {got} or expected {want} is not a finite number")
        elif not abs(got - want) <= tolerance:  # written so that a NaN difference fails
            problems.append(f"{column} {got:.2f} != expected {want:.2f}")
    return CheckOutcome(
        CHECK_BUSINESS_TOTALS,
        not problems,
        "totals agree with the upstream interval" if not problems else "; ".join(problems),
        observed,
    )


def _finite(value: Any) -> bool:
    try:
        return math.isfinite(float(value))
    except (TypeError, ValueError, OverflowError):
        return False


def _shown(value: Any) -> Any:
    """A number for check metadata: rounded when finite, else its text (Dagster's JSON metadata has no NaN)."""
    return round(float(value), 4) if _finite(value) else str(value)


def _infinite_values(column: pd.Series) -> int:
    """How many values of a numeric column are ±infinity (a missing value, NaN, is a null and is not counted)."""
    if pd.api.types.is_bool_dtype(column):
        return 0
    return int(np.isinf(column.to_numpy(dtype="float64", na_value=np.nan)).sum())


def check_schema(frame: pd.DataFrame, declared: dict[str, str]) -> CheckOutcome:
    actual = logical_schema(frame)
    diffs = [f"{c}: {actual.get(c, 'missing')} (declared {t})" for c, t in declared.items() if actual.get(c) != t]
    diffs += [f"{c}: unexpected column" for c in actual if c not in declared]
    return CheckOutcome(
        CHECK_SCHEMA,
        not diffs,
        "schema matches" if not diffs else "; ".join(diffs),
        {"schema": json.dumps(actual)},
    )


def check_file_integrity(
    written: WrittenVersion, warehouse: Warehouse, identity_labels: dict[str, str]
) -> CheckOutcome:
    try:
        payload = warehouse.read_bytes(written.path)
        manifest_bytes = warehouse.read_manifest_bytes(written.path)
    except IntegrityError as exc:
        return CheckOutcome(CHECK_FILE_INTEGRITY, False, str(exc))
    problems = _manifest_problems(manifest_bytes, written)
    try:
        manifest = json.loads(manifest_bytes)
    except ValueError:
        return CheckOutcome(CHECK_FILE_INTEGRITY, False, "; ".join(problems) or "manifest is not valid JSON")
    actual_sha = hashlib.sha256(payload).hexdigest()
    if actual_sha != manifest.get("sha256") or actual_sha != written.sha256:
        problems.append(f"sha256 {actual_sha[:12]}… differs from manifest {str(manifest.get('sha256'))[:12]}…")
    try:
        # The footer is enough: the bytes just hashed are the ones the writer produced (sha256 above), so the
        # rows and identity the footer declares are the file's own; decoding every page again proved nothing more.
        footer = parquet_footer(payload)
        if footer.num_rows != manifest.get("rows"):
            problems.append(f"{footer.num_rows} rows on disk, manifest says {manifest.get('rows')}")
        stored = json.loads((footer.metadata or {}).get(IDENTITY_METADATA_KEY, b"{}"))
        if stored != identity_labels:
            problems.append("identity in Parquet metadata differs from the run's identity")
    except Exception as exc:  # noqa: BLE001 - any unreadable file is an integrity failure, reported not raised
        problems.append(f"unreadable Parquet: {type(exc).__name__}")
    return CheckOutcome(
        CHECK_FILE_INTEGRITY,
        not problems,
        "file matches its manifest" if not problems else "; ".join(problems),
        {"sha256": actual_sha, "bytes": len(payload)},
    )


def _manifest_problems(manifest_bytes: bytes, written: WrittenVersion) -> list[str]:
    # The manifest read back must be the one written: its digest is what the catalog keeps with the version, and
    # what every later reader compares.
    actual = hashlib.sha256(manifest_bytes).hexdigest()
    if written.manifest_sha256 is not None and actual != written.manifest_sha256:
        return [f"manifest sha256 {actual[:12]}… differs from the one written {written.manifest_sha256[:12]}…"]
    return []


def check_names(spec: DeclaredAsset) -> list[tuple[str, str]]:
    """(name, description) of every blocking check of a data asset, file integrity last."""
    return [(a.name, a.description) for a in spec.audits] + [(CHECK_FILE_INTEGRITY, FILE_INTEGRITY_DESCRIPTION)]
