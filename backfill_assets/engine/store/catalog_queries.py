"""Read-only catalog queries (through the reader engine, which never blocks a publisher on SQLite)."""

from __future__ import annotations

import json
from contextlib import AbstractContextManager
from typing import Any, Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection, Engine

from backfill_assets.engine.model.errors import InvalidField, NotFound, quoted
from backfill_assets.engine.model.identity import parse_version_id, validate_asset_name, validate_partition_key
from backfill_assets.engine.model.states import VERIFIED, VersionState
from backfill_assets.engine.store.catalog_records import (
    Consumer,
    PublishedHead,
    Version,
    VersionOutcome,
    VersionRun,
)
from backfill_assets.engine.store.schema import pointers, publish_log, reads, versions
from backfill_assets.engine.store.transactions import read

ACTION_PUBLISH = "publish"
ACTION_ROLLBACK = "rollback"
ACTION_REPAIR = "repair"

# The reads every gated attempt makes, built once with their values as bound parameters. A statement built anew
# has its cache key computed again on each execution (~0.1 ms, as much as the query itself on SQLite); one built
# once keeps it, and its compiled form is the one SQLAlchemy would have cached.
VERSION_BY_ID = sa.select(versions).where(versions.c.version_id == sa.bindparam("b_version_id"))
VERSIONS_OF_CELL = (
    sa.select(versions)
    .where(versions.c.asset == sa.bindparam("b_asset"), versions.c.partition_key == sa.bindparam("b_partition"))
    .order_by(versions.c.created_at, versions.c.version_id)
)
CURRENT_OF_CELL = (
    sa.select(versions)
    .join(pointers, pointers.c.version_id == versions.c.version_id)
    .where(pointers.c.asset == sa.bindparam("b_asset"), pointers.c.partition_key == sa.bindparam("b_partition"))
)
POINTER_OF_CELL = sa.select(pointers).where(
    pointers.c.asset == sa.bindparam("b_asset"), pointers.c.partition_key == sa.bindparam("b_partition")
)
VERSION_WITH_POINTER = sa.select(
    versions,
    sa.select(pointers.c.version_id)
    .where(pointers.c.asset == versions.c.asset, pointers.c.partition_key == versions.c.partition_key)
    .scalar_subquery()
    .label("pointer_version_id"),
).where(versions.c.version_id == sa.bindparam("b_version_id"))


class CatalogQueries:
    """The catalog's reads; ``Catalog`` adds the writes. The static helpers also run inside write transactions."""

    reader: Engine
    engine: Engine

    def _reading(self) -> AbstractContextManager[Connection]:
        """A connection to read on: the open operation's transaction when there is one (it sees its own writes),
        else one of the read-only engine (``transactions.read``)."""
        return read(self.reader, self.engine)

    def get(self, version_id: str) -> Version:
        parse_version_id(version_id)
        with self._reading() as conn:
            return self._get(conn, version_id)

    def versions_of(self, asset: str, partition_key: str) -> list[Version]:
        validate_asset_name(asset)
        validate_partition_key(partition_key)
        with self._reading() as conn:
            rows = conn.execute(VERSIONS_OF_CELL, {"b_asset": asset, "b_partition": partition_key}).all()
        return Version.from_rows(rows)

    def versions_where(self, *criteria: Any) -> list[Version]:
        with self._reading() as conn:
            rows = conn.execute(sa.select(versions).where(*criteria).order_by(versions.c.created_at)).all()
        return Version.from_rows(rows)

    def current(self, asset: str, partition_key: str) -> Version | None:
        validate_asset_name(asset)
        validate_partition_key(partition_key)
        # One round trip: the pointer joined to its version.
        with self._reading() as conn:
            row = conn.execute(CURRENT_OF_CELL, {"b_asset": asset, "b_partition": partition_key}).first()
        return None if row is None else Version.from_row(row)

    def current_many(self, asset: str, partition_keys: Iterable[str]) -> dict[str, Version]:
        keys = list(partition_keys)
        if not keys:
            return {}
        with self._reading() as conn:
            rows = conn.execute(
                sa.select(versions)
                .join(pointers, pointers.c.version_id == versions.c.version_id)
                .where(pointers.c.asset == asset, pointers.c.partition_key.in_(keys))
            ).all()
        return {v.partition_key: v for v in Version.from_rows(rows)}

    def current_reads_many(self, asset: str, partition_keys: Iterable[str]) -> dict[str, tuple[str, dict[str, Any]]]:
        """Each of the days' current version id with the upstream versions it read (``input_versions``, ``{}``
        when none were recorded): what ``current_many`` reads, without the rest of each version's row."""
        keys = list(partition_keys)
        if not keys:
            return {}
        with self._reading() as conn:
            rows = conn.execute(
                sa.select(pointers.c.partition_key, versions.c.version_id, versions.c.input_versions_json)
                .join(pointers, pointers.c.version_id == versions.c.version_id)
                .where(pointers.c.asset == asset, pointers.c.partition_key.in_(keys))
            ).all()
        return {key: (version_id, (json.loads(raw) if raw else None) or {}) for key, version_id, raw in rows}

    def consumers_of(self, version_id: str) -> list[Consumer]:
        with self._reading() as conn:
            return self._consumers(conn, version_id)

    def history(self, asset: str, partition_key: str) -> list[dict[str, Any]]:
        """Every pointer move of one partition, oldest first: publishes, rollbacks (a restore) and repairs."""
        return [dict(r._mapping) for r in self._cell_rows(publish_log, asset, partition_key, publish_log.c.seq)]

    def _cell_rows(self, table: sa.Table, asset: str, partition_key: str, *order_by: Any) -> Sequence[sa.Row[Any]]:
        """One partition's rows of ``table`` (validated names first: they may come from a user)."""
        validate_asset_name(asset)
        validate_partition_key(partition_key)
        with self._reading() as conn:
            return conn.execute(
                sa.select(table)
                .where(table.c.asset == asset, table.c.partition_key == partition_key)
                .order_by(*order_by)
            ).all()

    def versions_of_request(self, request_id: str, published_only: bool = False) -> list[Version]:
        """Every version a request's runs wrote (or only those that were ever published), oldest first."""
        criteria = [versions.c.request_id == request_id]
        if published_only:
            criteria.append(versions.c.published_at.is_not(None))
        return self.versions_where(*criteria)

    def version_runs_of_request(self, request_id: str) -> list[VersionRun]:
        """Every version a request's runs wrote, as its day, run and whether it was published (oldest first)."""
        c = versions.c
        with self._reading() as conn:
            rows = conn.execute(
                sa.select(c.version_id, c.asset, c.partition_key, c.dagster_run_id, c.published_at)
                .where(c.request_id == request_id).order_by(c.created_at)
            ).all()
        return [VersionRun(r.version_id, r.asset, r.partition_key, r.dagster_run_id, r.published_at is not None)
                for r in rows]

    def published_heads_of_request(self, request_id: str) -> list[PublishedHead]:
        """Every version a request's runs published, oldest first, as ``versions_of_request(published_only=True)``
        orders them, without the rest of each row (``request show`` of a ten-year request reads 10,950)."""
        c = versions.c
        with self._reading() as conn:
            rows = conn.execute(
                sa.select(c.version_id, c.asset, c.partition_key, c.state, c.published_at)
                .where(c.request_id == request_id, c.published_at.is_not(None)).order_by(c.created_at)
            ).all()
        return [PublishedHead(*row) for row in rows]

    def versions_by_id(self, version_ids: Iterable[str]) -> list[Version]:
        return self._in_chunks(versions.c.version_id, version_ids)

    def versions_of_dagster_runs(self, run_ids: Iterable[str]) -> list[Version]:
        """Every version written by these Dagster runs (attempts), oldest first."""
        return self._in_chunks(versions.c.dagster_run_id, run_ids)

    def version_outcomes_of_dagster_runs(self, run_ids: Iterable[str]) -> list[VersionOutcome]:
        """How each version these Dagster runs wrote ended (no JSON column parsed), oldest first per chunk."""
        c = versions.c
        values = list(run_ids)
        found: list[VersionOutcome] = []
        with self._reading() as conn:
            for start in range(0, len(values), 500):  # bounded IN lists, as in _in_chunks
                rows = conn.execute(
                    sa.select(c.asset, c.partition_key, c.dagster_run_id, c.state, c.error)
                    .where(c.dagster_run_id.in_(values[start : start + 500])).order_by(c.created_at)
                ).all()
                found.extend(VersionOutcome(r.asset, r.partition_key, r.dagster_run_id, r.state, r.error)
                             for r in rows)
        return found

    def versions_of_partitions(self, partition_keys: Iterable[str]) -> list[Version]:
        """Every version of any asset for these partitions, oldest first within each chunk of keys."""
        return self._in_chunks(versions.c.partition_key, sorted(set(partition_keys)))

    def newest_versions_of_cells(self, cells: Iterable[tuple[str, str]]) -> list[Version]:
        """The newest version (by creation, then id) of each (asset, partition) cell that has one: one row per cell
        from the database, however many attempts the cell has had."""
        return Version.from_rows(self._newest_of_cells(cells, tuple(versions.c)))

    def newest_states_of_cells(self, cells: Iterable[tuple[str, str]]) -> dict[tuple[str, str], tuple[str, str]]:
        """(asset, partition) → (state, version id) of each cell's newest version, as ``newest_versions_of_cells``
        finds it, without the rest of its row (the dry run of a ten-year request asks it of 10,950 cells)."""
        columns = (versions.c.asset, versions.c.partition_key, versions.c.state, versions.c.version_id)
        # Unpacked, not read by attribute: a Row's attribute lookup costs more than the tuple it is.
        return {(asset, key): (state, version_id)
                for asset, key, state, version_id in self._newest_of_cells(cells, columns)}

    def _newest_of_cells(self, cells: Iterable[tuple[str, str]], columns: tuple[Any, ...]) -> list[sa.Row[Any]]:
        """``columns`` of ``versions`` (the cell's asset and partition among them) from the newest row of each of
        ``cells`` that has one."""
        wanted = set(cells)
        assets = sorted({a for a, _ in wanted})
        keys = sorted({p for _, p in wanted})
        newest_first = sa.func.row_number().over(
            partition_by=(versions.c.asset, versions.c.partition_key),
            order_by=(versions.c.created_at.desc(), versions.c.version_id.desc()),
        )
        names = [c.name for c in columns]
        asset_at, key_at = names.index("asset"), names.index("partition_key")
        found: list[sa.Row[Any]] = []
        with self._reading() as conn:
            for start in range(0, len(keys), 500):  # bounded IN lists, as in _in_chunks
                # Only the columns asked for go through the window: SQLite materializes what the subquery selects,
                # and a version's JSON columns are most of its row.
                ranked = (
                    sa.select(*columns, newest_first.label("newest_first"))
                    .where(versions.c.asset.in_(assets), versions.c.partition_key.in_(keys[start : start + 500]))
                    .subquery()
                )
                rows = conn.execute(
                    sa.select(*(ranked.c[c.name] for c in columns)).where(ranked.c.newest_first == 1)
                ).all()
                found.extend(r for r in rows if (r[asset_at], r[key_at]) in wanted)
        return found

    def purgeable_versions(self, states: Iterable[str], created_before: str) -> list[Version]:
        return self.versions_where(versions.c.state.in_(list(states)), versions.c.created_at < created_before)

    def last_publish_seq(self, request_id: str) -> int | None:
        """The request's newest publish_log sequence number, or None if it never published."""
        with self._reading() as conn:
            return conn.execute(
                sa.select(sa.func.max(publish_log.c.seq)).where(publish_log.c.request_id == request_id)
            ).scalar()

    def _in_chunks(self, column: Any, values: Iterable[str], size: int = 500) -> list[Version]:
        # Bounded IN lists: SQLite limits bound parameters per statement.
        values = list(values)
        found: list[Version] = []
        for start in range(0, len(values), size):
            found.extend(self.versions_where(column.in_(values[start : start + size])))
        return found

    def versions_of_run(self, logical_run_id: str) -> list[Version]:
        """Every version a logical run wrote (all its attempts)."""
        return self.versions_where(versions.c.run_id == logical_run_id)

    def newest_published_day(self) -> dict[str, str]:
        """asset → its newest partition with a current version (how far a depends-on-past asset has come)."""
        with self._reading() as conn:
            rows = conn.execute(
                sa.select(pointers.c.asset, sa.func.max(pointers.c.partition_key)).group_by(pointers.c.asset)
            ).all()
        return {asset: newest for asset, newest in rows}

    def publishes_of_request(self, request_id: str) -> Sequence[sa.Row[Any]]:
        """The request's publish_log rows (not rollbacks or repairs), in publish order."""
        with self._reading() as conn:
            return conn.execute(
                publish_log.select()
                .where(publish_log.c.request_id == request_id, publish_log.c.action == ACTION_PUBLISH)
                .order_by(publish_log.c.seq)
            ).all()

    def rolled_back_ids(self, version_ids: Iterable[str]) -> set[str]:
        """Which of ``version_ids`` a rollback (or a reject) took off the pointer, as the publish log records it:
        what a version was stays known after gc purged its files."""
        wanted = sorted(set(version_ids))
        found: set[str] = set()
        with self._reading() as conn:
            for start in range(0, len(wanted), 500):
                found.update(conn.execute(
                    sa.select(publish_log.c.previous_version_id).where(
                        publish_log.c.action == ACTION_ROLLBACK,
                        publish_log.c.previous_version_id.in_(wanted[start:start + 500]),
                    )
                ).scalars())
        return found

    def log_after(self, seq: int, limit: int = 1000) -> list[dict[str, Any]]:
        with self._reading() as conn:
            rows = conn.execute(
                sa.select(publish_log).where(publish_log.c.seq > seq).order_by(publish_log.c.seq).limit(limit)
            ).all()
        return [dict(r._mapping) for r in rows]

    @staticmethod
    def _pointer(conn: Connection, asset: str, partition_key: str) -> dict[str, Any] | None:
        row = conn.execute(POINTER_OF_CELL, {"b_asset": asset, "b_partition": partition_key}).first()
        return dict(row._mapping) if row else None

    @staticmethod
    def _get_with_pointer(conn: Connection, version_id: str) -> tuple[Version, str | None]:
        """The version and the version its partition's pointer holds now, in one round trip."""
        row = conn.execute(VERSION_WITH_POINTER, {"b_version_id": version_id}).first()
        if row is None:
            raise NotFound(f"unknown version {quoted(version_id)}")
        data = dict(row._mapping)
        pointer_version_id = data.pop("pointer_version_id")
        return Version.from_mapping(data), pointer_version_id

    @staticmethod
    def _get(conn: Connection, version_id: str) -> Version:
        row = conn.execute(VERSION_BY_ID, {"b_version_id": version_id}).first()
        if row is None:
            raise NotFound(f"unknown version {quoted(version_id)}")
        return Version.from_row(row)

    def _consumers(self, conn: Connection, version_id: str) -> list[Consumer]:
        rows = conn.execute(
            sa.select(reads, versions.c.request_id, versions.c.state)
            .select_from(reads.outerjoin(versions, versions.c.version_id == reads.c.consumer_version_id))
            .where(reads.c.upstream_version_id == version_id)
            .order_by(reads.c.id)
        ).all()
        return [
            Consumer(
                consumer=r.consumer,
                consumer_version_id=r.consumer_version_id,
                consumer_run_id=r.consumer_run_id,
                request_id=r.request_id,
                state=r.state,
                at=r.at,
            )
            for r in rows
        ]

    def _rollback_target(
        self, conn: Connection, asset: str, key: str, bad: str, to_version_id: str | None
    ) -> Version:
        if to_version_id is not None:
            parse_version_id(to_version_id)
            target = self._get(conn, to_version_id)
            if (target.asset, target.partition_key) != (asset, key):
                raise InvalidField("{to_version} {given} is not a version of {asset} {key}", given=to_version_id,
                                   asset=asset, key=key)
            if target.version_id == bad:
                raise InvalidField("{to_version} {given} is already the current version", given=to_version_id)
            if VersionState(target.state) not in VERIFIED:
                raise InvalidField("{to_version} {given} is {state}, not a verified version", given=to_version_id,
                                   state=target.state)
            return target
        # The previous verified version is the superseded one that was current most recently: the newest
        # publish_log row that made it current (a publish, or the restore of an earlier rollback), not its
        # published_at, which a restore leaves unchanged.
        last_current = (
            sa.select(sa.func.max(publish_log.c.seq))
            .where(
                publish_log.c.version_id == versions.c.version_id,
                publish_log.c.action.in_([ACTION_PUBLISH, ACTION_ROLLBACK]),
            )
            .scalar_subquery()
        )
        row = conn.execute(
            sa.select(versions)
            .where(
                versions.c.asset == asset,
                versions.c.partition_key == key,
                versions.c.version_id != bad,
                versions.c.state == VersionState.SUPERSEDED.value,
            )
            .order_by(last_current.desc(), versions.c.published_at.desc())
            .limit(1)
        ).first()
        if row is None:
            raise NotFound(f"{asset} {key} has no previous verified version to roll back to")
        return Version.from_row(row)

