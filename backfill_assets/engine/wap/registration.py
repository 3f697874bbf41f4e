"""A day's data fixed outside the platform, put through the gate a computed version goes through (``backfill-assets
register``; Airflow's "mark success", made safe).

The file is read and refused before anything is written when it is not the asset's format (Parquet, what every
gated asset stores), then the gate takes over exactly as for a computation: a version of its own run
(``register-<UTC time>-<random>``, attempt 1, lane ``manual``) is begun, the file's rows are written to the
version's own location in the warehouse (a copy: the user's path is never referenced again), audited by the
asset's blocking checks with the inputs a computation would read (recorded as the version's inputs) and by file
integrity, then published by the same compare-and-swap or rejected, the previous version serving on.

Nothing here knows who asked: the service checks the approver and the reason and records them.
"""

from __future__ import annotations

import hashlib
import secrets
import unicodedata
from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path, PurePath
from typing import Any

import pandas as pd

from backfill_assets.engine.model.asset_config import CONFIG_ARG
from backfill_assets.engine.model.errors import InvalidField, InvalidInput
from backfill_assets.engine.model.graph import FRAME_ARG, INTERVAL_ARG, PREVIOUS_ARG, RUN_ARG, AssetGraph, DeclaredAsset
from backfill_assets.engine.model.identity import RunIdentity, parameter_name_of, params_digest
from backfill_assets.engine.model.intervals import iso
from backfill_assets.engine.model.tags import LANE_MANUAL
from backfill_assets.engine.store.catalog_queries import CatalogQueries
from backfill_assets.engine.store.day_column import DAY_COLUMN
from backfill_assets.engine.store.parquet_files import frame_of_table, parquet_table

RUN_ID_PREFIX = "register-"
# A file is read whole into memory, as a step's frame is; a larger day is a computation's job.
MAX_FILE_BYTES = 1 << 30
PARQUET_MAGIC = b"PAR1"


@dataclass(frozen=True)
class RegisteredFile:
    """The file a person registers, read: its own name (never its folder: the version is a copy), its sha256 and
    size as given, and its rows as the asset's audits judge them."""

    name: str
    sha256: str
    size: int
    frame: pd.DataFrame

    def as_dict(self) -> dict[str, Any]:
        return {"file_name": self.name, "sha256": self.sha256, "bytes": self.size, "rows": len(self.frame)}


def read_registered_file(path: object, asset: str, day: str) -> RegisteredFile:
    """The file at ``path`` as a day of ``asset``, or an ``InvalidField`` naming ``path``: not a local file's path,
    a path climbing out of its folder with ``..``, missing, unreadable, too large, or not Parquet. A ``partition_date``
    column (the day the library adds to every data file) is dropped when it holds the day, refused otherwise."""
    where = _checked_path(path)
    try:
        size = where.stat().st_size
        if not where.is_file():
            raise InvalidField("{path} {value!r} is not a regular file", value=path)
        if size > MAX_FILE_BYTES:
            raise InvalidField("{path} {value!r} holds {size} bytes; at most {limit} can be registered", value=path,
                               size=size, limit=MAX_FILE_BYTES)
        payload = where.read_bytes()
    except FileNotFoundError as exc:
        raise InvalidField("{path} {value!r}: no such file", value=path) from exc
    except OSError as exc:
        raise InvalidField("{path} {value!r} cannot be read: {why}", value=path,
                           why=f"{type(exc).__name__}: {exc.strerror or exc}") from exc
    if not (payload.startswith(PARQUET_MAGIC) and payload.endswith(PARQUET_MAGIC)):
        raise InvalidField("{path} {value!r} is not a Parquet file, the format {asset} stores", value=path,
                           asset=asset)
    try:
        frame = frame_of_table(parquet_table(payload))
    except Exception as exc:  # noqa: BLE001 - whatever Arrow says of a damaged file, it is not registrable
        raise InvalidField("{path} {value!r} cannot be read as Parquet: {why}", value=path,
                           why=" ".join(f"{type(exc).__name__}: {exc}".split())) from exc
    return RegisteredFile(where.name, hashlib.sha256(payload).hexdigest(), len(payload), _without_day(frame, path, day))


def _checked_path(path: object) -> Path:
    if not isinstance(path, str) or not path.strip():
        raise InvalidField("{path} must name a file")
    if any(unicodedata.category(ch) in ("Cc", "Cs") for ch in path):
        raise InvalidField("{path} {value!r} contains a control character", value=path)
    if "://" in path:
        raise InvalidField("{path} {value!r} must be a file on this machine, not a URL", value=path)
    if ".." in PurePath(path).parts:
        raise InvalidField("{path} {value!r} climbs out of its folder with '..'; give the file's own path",
                           value=path)
    return Path(path)


def _without_day(frame: pd.DataFrame, path: object, day: str) -> pd.DataFrame:
    if DAY_COLUMN not in frame.columns:
        return frame
    days = {str(pd.Timestamp(d).date()) for d in frame[DAY_COLUMN].dropna().unique()}
    if days <= {day} and not frame[DAY_COLUMN].isna().any():
        return frame.drop(columns=[DAY_COLUMN])
    raise InvalidField("{path} {value!r} has a column {column} holding other days than {day}; the published tables "
                       "reserve it for the version's own day", value=path, column=DAY_COLUMN, day=day)


def registration_run_id(now: datetime) -> str:
    """A registration's own logical run id: ``register-20221017T093000-1a2b3c4d`` (UTC time, 32 random bits)."""
    return f"{RUN_ID_PREFIX}{now.strftime('%Y%m%dT%H%M%S')}-{secrets.token_hex(4)}"


def registration_identity(
    graph: AssetGraph, asset: str, day: str, run_id: str, dagster_run_id: str | None, code_version: str,
    source: RegisteredFile, now: datetime, worker: str,
) -> RunIdentity:
    """The identity of a registered version: its own run (attempt 1), no request, lane ``manual``; its params name
    the file it was made from, so two registrations of different files are different computations."""
    params = {"registered_file": source.as_dict()}
    return RunIdentity(
        asset=asset,
        interval=graph.calendar.interval(day),
        logical_run_id=run_id,
        dagster_run_id=dagster_run_id or run_id,
        request_id=None,
        code_version=code_version,
        params_digest=params_digest({"asset": asset, **params}),
        lane=LANE_MANUAL,
        requested_at=iso(now),
        started_at=iso(now) or "",
        worker=worker,
        params=params,
        location=graph.location,
    )


def audit_resources(spec: DeclaredAsset) -> tuple[str, ...]:
    """The resources the asset's audits ask for by name (a transform's own are not needed to judge a file)."""
    return tuple(r for r in spec.resources if any(r in audit.needs for audit in spec.audits))


def refuse_unjudgeable(
    catalog: CatalogQueries, graph: AssetGraph, spec: DeclaredAsset, day: str, resources: Collection[str]
) -> None:
    """Refuse, before anything is written, a file the asset's audits could not judge now: an upstream day (or a
    depends-on-past asset's previous day) with nothing published, or an audit asking for what only a computation
    has (``config``) or for a resource the caller cannot open."""
    missing = [f"{up} {day}" for up in spec.upstream if catalog.current(up, day) is None]
    previous_key = graph.calendar.previous_key(day) if spec.depends_on_past else None
    if previous_key is not None and catalog.current(spec.name, previous_key) is None:
        missing.append(f"{spec.name} {previous_key}")
    if missing:
        raise InvalidInput(f"{spec.name} {day}: its checks judge the file against published inputs, and "
                           f"{', '.join(missing)} has no published version; nothing changed")
    given = {INTERVAL_ARG, RUN_ARG, FRAME_ARG, *(parameter_name_of(u) for u in spec.upstream), *resources}
    if spec.depends_on_past:
        given.add(PREVIOUS_ARG)
    for audit in spec.audits:
        unmet = [need for need in audit.needs if need not in given]
        if unmet:
            why = "only a computation has it" if CONFIG_ARG in unmet else "no resource of that name is open here"
            raise InvalidInput(f"{spec.name}: its check {audit.name} asks for {', '.join(unmet)} ({why}), so a "
                               "registered file cannot be judged by it; nothing changed")
