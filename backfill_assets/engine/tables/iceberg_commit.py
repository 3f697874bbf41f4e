"""One sync's Iceberg commit: every changed day switched in one snapshot, its data files described from their
Parquet footers. Imported by a sync only (it imports pyiceberg at once: ``iceberg_table.SYNC_MODULES``).

Two costs of pyiceberg 0.12 are avoided, the commit unchanged:

- ``Transaction.table_metadata`` replays the staged updates and deep-copies the whole table metadata (every
  snapshot and its summary) on each read, and one overwrite reads it about 18 times: a commit cost more the more
  snapshots the table had. ``_MetadataOnce`` computes it once per staged state (the same cache pyiceberg's own
  maintainers proposed upstream); the value is what pyiceberg would return, read by pyiceberg's code only.
- ``parquet_file_to_data_file`` reads a file's footer, checks its schema against the table's and builds the
  statistics plan for every file; the sync read the footer a second time for the schema evolution. Here each footer
  is read once for both, the plan built once per commit and each distinct file schema checked once: the same
  checks on the same footers, the same ``DataFile``.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
from pyiceberg.expressions import In
from pyiceberg.io.pyarrow import (
    _check_pyarrow_schema_compatible,
    compute_statistics_plan,
    data_file_statistics_from_parquet_metadata,
    parquet_path_to_id_mapping,
)
from pyiceberg.manifest import DataFile, DataFileContent, FileFormat
from pyiceberg.table import Table, Transaction
from pyiceberg.table.metadata import TableMetadata

from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.day_column import DAY_COLUMN
from backfill_assets.engine.store.pointer_log import PointerChanges
from backfill_assets.engine.wap.faults import BEFORE_TABLE_COMMIT, fault_point


class _MetadataOnce(Transaction):
    """pyiceberg's transaction, its ``table_metadata`` kept while neither the table's metadata nor the staged
    updates change: both are replaced, never modified (``_updates`` is a tuple rebound on every stage), so their
    identity says whether the value still holds."""

    _kept: tuple[TableMetadata, tuple[Any, ...], TableMetadata] | None = None

    @property
    def table_metadata(self) -> TableMetadata:
        base, updates = self._table.metadata, self._updates
        kept = self._kept
        if kept is not None and kept[0] is base and kept[1] is updates:
            return kept[2]
        metadata: TableMetadata = Transaction.table_metadata.fget(self)  # type: ignore[attr-defined]
        self._kept = (base, updates, metadata)
        return metadata


class _Footer:
    """A version's data file as the commit needs it: its Parquet footer and size, read once."""

    def __init__(self, table: Table, version: Version):
        self.version, self.path = version, str(version.path)
        source = table.io.new_input(self.path)
        with source.open() as stream:
            self.metadata = pq.read_metadata(stream)  # type: ignore[arg-type]  # a file object, as pyiceberg's
        self.size = len(source)
        self.arrow_schema = self.metadata.schema.to_arrow_schema().remove_metadata()


def commit_changes(table: Table, changes: PointerChanges, summary: dict[str, str], file_schema: Any) -> None:
    """Switch every changed day in one snapshot: its current files out, its new file in. ``file_schema``: a
    version's file schema for a table being created (``iceberg_table._file_schema``), refusing a file without the
    day column."""
    footers = [_Footer(table, version) for version in changes.days.values()]
    days = [date.fromisoformat(key) for key in changes.days]
    with _MetadataOnce(table) as tx:
        _evolve_schema(tx, footers, file_schema)
        # pyiceberg's In takes (term, values) positionally; mypy sees only the __init__ pydantic makes of its fields.
        in_days = In(DAY_COLUMN, days)  # type: ignore[call-arg, arg-type]
        old_files = [task.file for task in table.scan(row_filter=in_days).plan_files()] \
            if table.current_snapshot() is not None else []
        metadata = tx.table_metadata
        new_files = _data_files(metadata, [f for f in footers if f.version.rows])  # an empty day: nothing comes
        with tx.update_snapshot(snapshot_properties=summary).overwrite() as overwrite:
            for data_file in old_files:
                overwrite.delete_data_file(data_file)
            for data_file in new_files:
                overwrite.append_data_file(data_file)
        # The snapshot's manifests are written; only the catalog's swap of the table's metadata is left.
        fault_point(BEFORE_TABLE_COMMIT)


def _evolve_schema(tx: Transaction, footers: list[_Footer], file_schema: Any) -> None:
    """Columns a new version adds join the table's schema (union by name); a changed type fails the sync. A day
    without rows adds nothing: its file's columns may have no type (Arrow's null), and it adds no file either; a
    day with rows and a column without a type fails the sync, naming it."""
    names = set(tx.table_metadata.schema().column_names)
    for footer in footers:
        untyped = footer.version.rows and any(pa.types.is_null(field.type) for field in footer.arrow_schema)
        if DAY_COLUMN not in footer.arrow_schema.names or untyped:
            file_schema(footer.version)  # raises the sync's error naming the version
        if footer.version.rows and set(footer.arrow_schema.names) - names:
            with tx.update_schema() as update:
                update.union_by_name(footer.arrow_schema)
            names |= set(footer.arrow_schema.names)


def _data_files(metadata: TableMetadata, footers: list[_Footer]) -> list[DataFile]:
    """pyiceberg's ``parquet_file_to_data_file`` for each footer, the table's parts of it computed once."""
    schema = metadata.schema()
    plan = compute_statistics_plan(schema, metadata.properties)
    mapping = parquet_path_to_id_mapping(schema)
    spec = metadata.spec()
    checked: list[pa.Schema] = []
    files = []
    for footer in footers:
        if not any(footer.arrow_schema.equals(seen) for seen in checked):
            _check_pyarrow_schema_compatible(schema, footer.arrow_schema, format_version=metadata.format_version)
            checked.append(footer.arrow_schema)
        statistics = data_file_statistics_from_parquet_metadata(footer.metadata, plan, mapping)
        files.append(DataFile.from_args(
            content=DataFileContent.DATA,
            file_path=footer.path,
            file_format=FileFormat.PARQUET,
            partition=statistics.partition(spec, schema),
            file_size_in_bytes=footer.size,
            sort_order_id=None,
            spec_id=metadata.default_spec_id,
            equality_ids=None,
            key_metadata=None,
            **statistics.to_serialized_dict(),
        ))
    return files
