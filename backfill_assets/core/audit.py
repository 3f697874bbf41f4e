"""Blocking audits of a written (not yet published) version. Each returns a ``CheckOutcome``; none raises."""

from __future__ import annotations

import hashlib
import io
import json
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow.parquet as pq

from .domain import AssetSpec, Expectations, logical_schema
from .errors import IntegrityError
from .storage import IDENTITY_METADATA_KEY, Warehouse, WrittenVersion

CHECK_ROW_COUNT = "row_count"
CHECK_PRIMARY_KEY = "primary_key_unique"
CHECK_BUSINESS_TOTALS = "business_totals"
CHECK_SCHEMA = "schema_matches"
CHECK_FILE_INTEGRITY = "file_integrity"
ALL_CHECKS = (CHECK_ROW_COUNT, CHECK_PRIMARY_KEY, CHECK_BUSINESS_TOTALS, CHECK_SCHEMA, CHECK_FILE_INTEGRITY)

CHECK_DESCRIPTIONS = {
    CHECK_ROW_COUNT: "Rows equal the independently computed expectation (the source count for extracts).",
    CHECK_PRIMARY_KEY: "No duplicate primary keys.",
    CHECK_BUSINESS_TOTALS: "Amounts agree with the upstream interval.",
    CHECK_SCHEMA: "Columns and logical types equal the declared schema.",
    CHECK_FILE_INTEGRITY: "Re-read from storage: sha256, row count and identity match the manifest.",
}


@dataclass(frozen=True)
class CheckOutcome:
    name: str
    passed: bool
    description: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "description": self.description, **self.metadata}


def audit(
    spec: AssetSpec,
    frame: pd.DataFrame,
    expected: Expectations,
    written: WrittenVersion,
    warehouse: Warehouse,
    identity_labels: dict[str, str],
) -> list[CheckOutcome]:
    return [
        check_row_count(frame, expected),
        check_primary_key(frame, spec.primary_key),
        check_business_totals(frame, expected),
        check_schema(frame, spec.schema),
        check_file_integrity(written, warehouse, identity_labels),
    ]


def check_row_count(frame: pd.DataFrame, expected: Expectations) -> CheckOutcome:
    rows = len(frame)
    passed = rows == expected.rows
    return CheckOutcome(
        CHECK_ROW_COUNT,
        passed,
        f"{rows} rows" + ("" if passed else f", expected {expected.rows}"),
        {"rows": rows, "expected_rows": expected.rows},
    )


def check_primary_key(frame: pd.DataFrame, key: tuple[str, ...]) -> CheckOutcome:
    missing = [c for c in key if c not in frame.columns]
    if missing:
        return CheckOutcome(CHECK_PRIMARY_KEY, False, f"key columns missing: {missing}", {"key": list(key)})
    duplicated = int(frame.duplicated(subset=list(key)).sum())
    return CheckOutcome(
        CHECK_PRIMARY_KEY,
        duplicated == 0,
        "no duplicate keys" if duplicated == 0 else f"{duplicated} duplicate key(s) on {list(key)}",
        {"duplicates": duplicated, "key": ",".join(key)},
    )


def check_business_totals(frame: pd.DataFrame, expected: Expectations) -> CheckOutcome:
    problems: list[str] = []
    observed: dict[str, Any] = {}
    for column, want in expected.totals.items():
        if column not in frame.columns:
            problems.append(f"{column} missing")
            continue
        if not pd.api.types.is_numeric_dtype(frame[column]):
            problems.append(f"{column} is not numeric")
            continue
        got = float(frame[column].sum())
        observed[f"total_{column}"] = round(got, 4)
        observed[f"expected_{column}"] = round(want, 4)
        if abs(got - want) > expected.tolerance:
            problems.append(f"{column} {got:.2f} != expected {want:.2f}")
    return CheckOutcome(
        CHECK_BUSINESS_TOTALS,
        not problems,
        "totals agree with the upstream interval" if not problems else "; ".join(problems),
        observed,
    )


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
        manifest = warehouse.read_manifest(written.path)
    except IntegrityError as exc:
        return CheckOutcome(CHECK_FILE_INTEGRITY, False, str(exc))
    problems = []
    actual_sha = hashlib.sha256(payload).hexdigest()
    if actual_sha != manifest.get("sha256") or actual_sha != written.sha256:
        problems.append(f"sha256 {actual_sha[:12]}… differs from manifest {str(manifest.get('sha256'))[:12]}…")
    try:
        parquet = pq.read_table(io.BytesIO(payload))
        if parquet.num_rows != manifest.get("rows"):
            problems.append(f"{parquet.num_rows} rows on disk, manifest says {manifest.get('rows')}")
        stored = json.loads((parquet.schema.metadata or {}).get(IDENTITY_METADATA_KEY, b"{}"))
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
