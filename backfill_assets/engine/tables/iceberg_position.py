"""A table's publish log position read from its current metadata file, without pyiceberg.

What ``table_seq`` reads of a loaded table, read from the file the SQL catalog's row names: the current snapshot's
summary (``backfill-assets.publish-seq``), or its nearest ancestor's. The fields are the Iceberg table spec's
(``current-snapshot-id``, ``snapshots``, ``parent-snapshot-id``, ``summary``). Only a local file is read here (an
object store's needs the FileIO properties pyiceberg resolves); anything else, or anything unexpected in the file,
raises ``NotReadableHere`` and the caller loads the table with pyiceberg.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from backfill_assets.engine.store.iceberg_catalog_rows import NotReadableHere

GZIP_MAGIC = b"\x1f\x8b"


def seq_in_metadata(location: str, seq_property: str) -> int:
    """The publish log position the table's current snapshot holds (0: no snapshot, or none of ours)."""
    metadata = _read_local(location)
    try:
        current = metadata.get("current-snapshot-id")
        by_id = {s["snapshot-id"]: s for s in metadata.get("snapshots", [])}
        # Format v1 writes -1 for "no current snapshot".
        snapshot_id = None if current in (None, -1) else current
        while snapshot_id is not None:
            snapshot = by_id.get(snapshot_id)
            if snapshot is None:
                # An expired ancestor: pyiceberg's walk stops there too (snapshot_by_id finds nothing).
                return 0
            raw = (snapshot.get("summary") or {}).get(seq_property)
            if raw is not None and str(raw).isdigit():
                return int(raw)
            snapshot_id = snapshot.get("parent-snapshot-id")
    except (AttributeError, KeyError, TypeError) as exc:
        raise NotReadableHere(f"{location}: not the metadata this reader knows ({exc!r})") from exc
    return 0


def _read_local(location: str) -> dict[str, Any]:
    parsed = urlparse(location)
    if parsed.scheme not in ("", "file"):
        raise NotReadableHere(f"{parsed.scheme}:// metadata is read through pyiceberg's FileIO")
    path = Path(unquote(parsed.path) if parsed.scheme else location)
    try:
        raw = path.read_bytes()
        # Another writer (Java's Iceberg) may gzip a metadata file (``.gz.metadata.json``); pyiceberg reads it too.
        metadata = json.loads(gzip.decompress(raw) if raw[:2] == GZIP_MAGIC else raw)
    except (OSError, ValueError) as exc:
        raise NotReadableHere(f"{location}: {type(exc).__name__}") from exc
    if not isinstance(metadata, dict):
        raise NotReadableHere(f"{location}: not a table's metadata")
    return metadata
