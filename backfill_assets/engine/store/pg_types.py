"""How an Arrow column becomes a column of a PostgreSQL published table (``pg_tables.py``): its type as
PostgreSQL's ``format_type`` spells it, its values as ``COPY ... (FORMAT csv)`` reads them, the names it may
have."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from backfill_assets.engine.model.errors import BackfillError, quoted

MAX_IDENTIFIER_BYTES = 63  # PostgreSQL's NAMEDATALEN - 1: a longer name would be truncated silently


class PgTableError(BackfillError):
    """A PostgreSQL published table could not be brought to the pointers (it keeps serving what it held)."""


def pg_type(field: pa.Field[Any]) -> str | None:
    """The PostgreSQL type of an Arrow column, spelled as ``format_type`` spells it (None: a column of nulls
    only, whose type no version has said yet; it is left out)."""
    t = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
    if pa.types.is_null(t):
        return None
    if pa.types.is_boolean(t):
        return "boolean"
    if pa.types.is_int8(t) or pa.types.is_int16(t) or pa.types.is_int32(t) \
            or pa.types.is_uint8(t) or pa.types.is_uint16(t):
        return "integer"
    if pa.types.is_int64(t) or pa.types.is_uint32(t):
        return "bigint"
    if pa.types.is_uint64(t):
        return "numeric(20,0)"
    if pa.types.is_floating(t):
        return "double precision"
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return "text"
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return "bytea"
    if pa.types.is_date(t):
        return "date"
    if pa.types.is_timestamp(t):
        return "timestamp with time zone" if t.tz else "timestamp without time zone"
    if pa.types.is_time(t):
        return "time without time zone"
    if pa.types.is_decimal(t):
        return f"numeric({t.precision},{t.scale})"
    raise PgTableError(
        f"column {quoted(field.name)} is of type {t}, which the PostgreSQL published table cannot hold "
        "(supported: integers, floats, strings, booleans, dates, times, timestamps, decimals, binary)"
    )


def table_columns(table: pa.Table) -> list[tuple[str, str]]:
    """(name, PostgreSQL type) of every column the version's table gets, in the file's order."""
    columns: list[tuple[str, str]] = []
    for field in table.schema:
        if len(field.name.encode()) > MAX_IDENTIFIER_BYTES or not field.name or "\x00" in field.name:
            raise PgTableError(f"column {quoted(field.name)}: a PostgreSQL column name is 1 to 63 bytes")
        typ = pg_type(field)
        if typ is not None:
            columns.append((field.name, typ))
    names = [n for n, _ in columns]
    if len(set(names)) != len(names):
        raise PgTableError(f"the data file has duplicate column names: {quoted(names, 200)}")
    return columns


def csv_ready(column: pa.ChunkedArray[Any]) -> pa.ChunkedArray[Any] | pa.Array[Any]:
    """A column as Arrow's CSV writer renders it for COPY: categories as their values, half floats widened, bytes
    as PostgreSQL's hex ``\\x…``."""
    if pa.types.is_dictionary(column.type):
        column = pc.cast(column, column.type.value_type)
    if pa.types.is_float16(column.type):
        column = pc.cast(column, pa.float64())
    if pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type) \
            or pa.types.is_fixed_size_binary(column.type):
        return pa.array([None if b is None else "\\x" + b.hex() for b in column.to_pylist()], pa.string())
    return column
