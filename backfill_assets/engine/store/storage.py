"""The warehouse: every version is written once to its own location and never modified.

    <root>/<asset>/date=<partition_key>/_runs/<run_id>/attempt=<n>/data.parquet
                                                                  /_manifest.json

The root is any universal-pathlib URL (local folder, ``s3://``, ``memory://`` ...). Atomic visibility comes from
the catalog pointer, not from the file system, so object stores without rename work the same way.

When the storage itself fails (an S3 endpoint that refuses or resets connections, a timeout, a full disk), every
operation raises ``StorageError`` naming the warehouse, what it was doing and the storage's own reason, instead of
the backend's exception: a step then fails (and is retried) saying which storage failed, and nothing was
published, since only the catalog pointer makes a version visible.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Iterator

import pandas as pd
import pyarrow.parquet as pq
from upath import UPath

from backfill_assets.engine.model.errors import IntegrityError, ManifestMismatch, StorageError, UnsafeName, quoted
from backfill_assets.engine.model.identity import (
    MAX_KEY_SEGMENTS,
    validate_asset_name,
    validate_partition_key,
    validate_run_id,
)
from backfill_assets.engine.model.run_context import ENGINE_DIR  # an external engine's output (gc removes it too)
from backfill_assets.engine.store.parquet_files import (
    IDENTITY_METADATA_KEY,
    column_stats,
    dictionary_columns,
    frame_of_table,
    frame_schema,
    parquet_payload,
    parquet_table,
)
from backfill_assets.engine.wap.faults import AFTER_DATA_FILE, AFTER_MANIFEST, fault_point

if TYPE_CHECKING:
    from backfill_assets.engine.store.catalog_records import Version

PARTITION_COLUMN = "date"
DATA_FILE = "data.parquet"
MANIFEST_FILE = "_manifest.json"
# What the file system says about the object itself, for the caller to judge (a missing version is an integrity
# failure, not a storage outage).
FILE_ANSWERS = (FileNotFoundError, FileExistsError)
REASON_MAX_CHARS = 600


@dataclass(frozen=True)
class WrittenVersion:
    path: str
    rows: int
    sha256: str
    schema: dict[str, str]
    stats: dict[str, Any]
    manifest_sha256: str | None = None  # of _manifest.json's bytes as written: the catalog keeps it with the version


class Warehouse:
    def __init__(self, root: str):
        self.root = UPath(root)
        self._resolved_root: str | None = None

    def _local_root(self) -> str:
        """The local root with its symlinks resolved, once per warehouse object."""
        if self._resolved_root is None:
            self._resolved_root = os.path.realpath(self.root.path)
        return self._resolved_root

    def version_dir(self, asset: str, partition_key: str, run_id: str, attempt_no: int) -> UPath:
        validate_asset_name(asset)
        validate_partition_key(partition_key)
        validate_run_id(run_id)
        if isinstance(attempt_no, bool) or not isinstance(attempt_no, int) or attempt_no < 1:
            raise UnsafeName(f"attempt number {quoted(attempt_no)} must be a positive integer")
        path = (
            self.root / asset / f"{PARTITION_COLUMN}={partition_key}" / "_runs" / run_id / f"attempt={attempt_no}"
        )
        self._ensure_inside(path)
        return path

    def _ensure_inside(self, path: UPath) -> None:
        # Defence in depth behind name validation: a symlinked or odd root must still not be escaped.
        if _is_local(self.root):
            # Every path resolved on the file system (symlinks followed), compared as text below the root's own
            # resolution, taken once: UPath's resolve and parents cost ~15x the os.path calls on every read.
            root = self._local_root()
            if not _is_local(path) or not os.path.realpath(path.path).startswith(root.rstrip(os.sep) + os.sep):
                raise UnsafeName(f"path {path} escapes the warehouse root {root}")
            return
        # An object store has no symlinks, but a key may still climb out with "..": compare normalized keys, in the
        # same store (protocol and bucket), below the root's prefix.
        root_key = posixpath.normpath(self.root.path)
        key = posixpath.normpath(path.path)
        if path.protocol != self.root.protocol or not key.startswith(root_key.rstrip("/") + "/"):
            raise UnsafeName(f"path {path} escapes the warehouse root {self.root}")

    def write(
        self,
        directory: UPath,
        frame: pd.DataFrame,
        identity_labels: dict[str, str],
        manifest_extra: dict[str, Any],
        day: str | None = None,
    ) -> WrittenVersion:
        """Write ``data.parquet`` then ``_manifest.json``; refuse to overwrite either. ``day``: the partition's
        business day (``YYYY-MM-DD``), written as the ``partition_date`` column for the published tables."""
        stats = column_stats(frame)
        payload = parquet_payload(frame, identity_labels, day, dictionary_columns(frame, stats))
        sha = hashlib.sha256(payload).hexdigest()

        with storage_call(self.root, "creating", directory):
            directory.mkdir(parents=True, exist_ok=True)
        data_path = directory / DATA_FILE
        self._write_once(data_path, payload)
        fault_point(AFTER_DATA_FILE)
        schema = frame_schema(frame)
        manifest = {
            "rows": len(frame),
            "sha256": sha,
            "bytes": len(payload),
            "schema": schema,
            "stats": stats,
            "identity": identity_labels,
            **manifest_extra,
        }
        manifest_bytes = json.dumps(manifest, indent=2, default=str).encode()
        self._write_once(directory / MANIFEST_FILE, manifest_bytes)
        fault_point(AFTER_MANIFEST)
        return WrittenVersion(
            path=str(data_path), rows=len(frame), sha256=sha, schema=schema, stats=stats,
            manifest_sha256=hashlib.sha256(manifest_bytes).hexdigest(),
        )

    def _write_once(self, path: UPath, payload: bytes) -> None:
        with storage_call(self.root, "writing", path):
            exists = path.exists()
        if exists:
            raise IntegrityError(f"{path} already exists; versions are written once and never modified")
        with storage_call(self.root, "writing", path):
            with path.open("xb") if _is_local(path) else path.open("wb") as fh:
                fh.write(payload)

    def read_bytes(self, path: str) -> bytes:
        target = UPath(path)
        self._ensure_inside(target)
        try:
            with storage_call(self.root, "reading", target):
                return target.read_bytes()
        except FileNotFoundError as exc:
            raise IntegrityError(f"data file {path} is missing") from exc

    def read_verified(self, path: str, sha256: str, rows: int | None = None) -> pd.DataFrame:
        """Read a data file, refusing it if the bytes differ from ``sha256`` (and its rows from ``rows``). A
        catalog version is read with ``read_version``, which checks its manifest too."""
        payload = self.read_bytes(path)
        _check_data(path, payload, sha256)
        return _frame_of(path, payload, rows)

    def read_version(self, version: Version) -> pd.DataFrame:
        """A catalog version's data, verified as every reader must: its manifest and its data file (both as
        ``verify_version``), then its row count."""
        payload = self.verify_version(version)
        return _frame_of(str(version.path), payload, version.rows)

    def verify_version(self, version: Version) -> bytes:
        """The one check of a stored version, for every reader, audit, report and pointer move: its
        ``_manifest.json`` is the one written (its sha256 is the catalog's ``manifest_sha256``) and its data file's
        sha256 is the catalog's. Returns the data file's bytes. A version written before the catalog kept manifest
        digests (``manifest_sha256`` NULL) has its data file verified only. Raises ``IntegrityError`` naming the
        version and what differs (``ManifestMismatch`` for its manifest)."""
        if not version.path or not version.sha256:
            raise IntegrityError(f"version {version.version_id} has no stored file")
        if version.manifest_sha256:
            self._verify_manifest(version)
        payload = self.read_bytes(version.path)
        _check_data(version.path, payload, version.sha256, version.version_id)
        return payload

    def _verify_manifest(self, version: Version) -> None:
        where = UPath(str(version.path)).parent / MANIFEST_FILE
        try:
            payload = self.read_manifest_bytes(str(version.path))
        except IntegrityError as exc:
            raise ManifestMismatch(f"version {version.version_id}: its manifest {where} is missing") from exc
        actual = hashlib.sha256(payload).hexdigest()
        if actual != version.manifest_sha256:
            raise ManifestMismatch(
                f"version {version.version_id}: its manifest {where} was changed after it was written "
                f"({manifest_difference(payload, version)}; sha256 {actual[:12]}…, the catalog's "
                f"{str(version.manifest_sha256)[:12]}…)"
            )

    def read_manifest_bytes(self, data_path: str) -> bytes:
        """The ``_manifest.json`` beside a data file, as stored (``IntegrityError`` when it is missing)."""
        manifest_path = UPath(data_path).parent / MANIFEST_FILE
        self._ensure_inside(manifest_path)
        try:
            with storage_call(self.root, "reading", manifest_path):
                return manifest_path.read_bytes()
        except FileNotFoundError as exc:
            raise IntegrityError(f"manifest {manifest_path} is missing") from exc

    def read_manifest(self, data_path: str) -> dict[str, Any]:
        manifest: dict[str, Any] = json.loads(self.read_manifest_bytes(data_path))
        return manifest

    def remove_version(self, data_path: str) -> None:
        """Delete one version's files (an external engine's output among them) and its now-empty attempt folder
        (gc only)."""
        directory = UPath(data_path).parent
        self._ensure_inside(directory / DATA_FILE)
        engine_output = directory / ENGINE_DIR
        with storage_call(self.root, "deleting", engine_output):
            if engine_output.exists():
                engine_output.fs.rm(engine_output.path, recursive=True)
        for name in (DATA_FILE, MANIFEST_FILE):
            target = directory / name
            with storage_call(self.root, "deleting", target):
                if target.exists():
                    target.unlink()
        try:
            directory.rmdir()
        except _storage_failures():
            pass  # something else lives there (or the storage went away after the objects did); leave it

    @staticmethod
    def read_identity(data_path: str) -> dict[str, str]:
        target = UPath(data_path)
        with storage_call(target.parent, "reading", target), target.open("rb") as fh:
            meta = pq.read_schema(fh).metadata or {}
        raw = meta.get(IDENTITY_METADATA_KEY)
        return json.loads(raw) if raw else {}


def first_stored_version(root: str) -> str | None:
    """A version's manifest in the warehouse at ``root`` (``<asset>/date=<key>/_runs/<run>/attempt=<n>/``), or None
    when it holds none: the first found ends the walk, which goes no deeper than that layout."""
    base = UPath(root)
    with storage_call(base, "listing", base):
        if not base.exists():
            return None
        for partition in _partition_dirs(base):
            for attempt in _dirs(partition / "_runs", depth=2):
                if (attempt / MANIFEST_FILE).exists():
                    return _relative(base, attempt / MANIFEST_FILE)
    return None


def _partition_dirs(path: UPath, depth: int = MAX_KEY_SEGMENTS) -> Iterator[UPath]:
    """The ``date=<key>`` directories below ``path``: an asset's own directory sits one level down per segment of
    its key ("berlin/daily_usage" → berlin/daily_usage/date=...)."""
    for child in _dirs(path):
        if child.name.startswith(f"{PARTITION_COLUMN}="):
            yield child
        elif depth > 1:
            yield from _partition_dirs(child, depth - 1)


def _dirs(path: UPath, depth: int = 1) -> Iterator[UPath]:
    if not path.is_dir():
        return
    for child in path.iterdir():
        if child.is_dir():
            yield from ([child] if depth == 1 else _dirs(child, depth - 1))


def _check_data(path: str, payload: bytes, sha256: str, version_id: str | None = None) -> None:
    actual = hashlib.sha256(payload).hexdigest()
    if actual != sha256:
        named = f"version {version_id}: " if version_id else ""
        raise IntegrityError(f"{named}{path}: sha256 {actual[:12]}… does not match the catalog's {sha256[:12]}…")


def _frame_of(path: str, payload: bytes, rows: int | None) -> pd.DataFrame:
    frame = frame_of_table(parquet_table(payload))
    if rows is not None and len(frame) != rows:
        raise IntegrityError(f"{path}: {len(frame)} rows, the catalog says {rows}")
    return frame


def manifest_difference(payload: bytes, version: Version) -> str:
    """What a changed manifest says that the catalog does not, in a few words (its fields that name the version
    and its data: rows, sha256, version_id), or that it is no longer JSON."""
    try:
        manifest = json.loads(payload)
    except ValueError:
        return "it is not valid JSON"
    if not isinstance(manifest, dict):
        return "it is not a JSON object"
    differing = [
        f"{key} {str(manifest.get(key))[:24]!r} (catalog {str(want)[:24]!r})"
        for key, want in (("rows", version.rows), ("sha256", version.sha256), ("version_id", version.version_id))
        if manifest.get(key) != want
    ]
    return "; ".join(differing) if differing else "its content differs"


def _is_local(path: UPath) -> bool:
    return not path.protocol or path.protocol == "file"


@contextmanager
def storage_call(root: UPath, action: str, target: UPath) -> Iterator[None]:
    """Turn a failure of the storage itself into one ``StorageError`` line naming the warehouse, the operation,
    the object and the backend's reason (for S3, botocore's message names the endpoint URL)."""
    try:
        yield
    except (StorageError, *FILE_ANSWERS):
        raise
    except _storage_failures() as exc:
        reason = " ".join(f"{type(exc).__name__}: {exc}".split())[:REASON_MAX_CHARS]
        where = _relative(root, target)
        raise StorageError(f"warehouse storage {root} failed while {action} {where}: {reason}") from exc


@cache
def _storage_failures() -> tuple[type[BaseException], ...]:
    """OSError and the backend's own errors (a call: botocore is imported only when something failed)."""
    return (OSError, *_backend_errors())


def _backend_errors() -> tuple[type[BaseException], ...]:
    """The errors an installed backend raises untranslated when its storage fails. s3fs turns S3's error responses
    into OSError, but passes botocore's own through: a refused or reset connection, a timeout, no credentials."""
    try:
        from botocore.exceptions import BotoCoreError
    except ImportError:  # no S3 backend installed: every other failure is an OSError
        return ()
    return (BotoCoreError,)


def _relative(root: UPath, target: UPath) -> str:
    root_text, text = str(root).rstrip("/"), str(target)
    return text[len(root_text) + 1:] if text.startswith(root_text + "/") else text
