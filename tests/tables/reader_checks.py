"""Judging what readers that know nothing of the library saw, against the catalog they never read.

A reader's observation is, per day, either the data files it read (pyiceberg's planned scan: each file is one
version's ``data.parquet``) or only the rows' content (DuckDB, polars, the warehouse folder: per day the row count
and the sum of a measure, matched against each version's own file read with pyarrow). Either way it becomes, per
day, the versions the rows can be. An observation is correct when:

- every day's rows are exactly one version's, whole (a version's file, its ``rows`` rows; never two versions,
  never part of one);
- none of them is a version that was never published (REJECTED, ABANDONED, or still in flight);
- the whole table equals the pointers as they stood at some position of the publish log, and a reader's positions
  never go back (a day moves backwards only by a rollback, which is a later position of the log).
"""

from __future__ import annotations

import math
from bisect import bisect_right
from collections import Counter
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Iterable

import pyarrow.compute as pc
import pyarrow.parquet as pq
import sqlalchemy as sa

from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.catalog_records import Version
from backfill_assets.engine.store.day_column import DAY_COLUMN
from backfill_assets.engine.store.schema import pointers, publish_log

# The publish log's rows that move a pointer (an accept logs a publish, a reject a rollback); a repair moves none.
MOVES = ("publish", "rollback")
# A version's sum read by another engine differs from pyarrow's in the last bits only (summation order).
SUM_TOLERANCE = 1e-6


@dataclass(frozen=True)
class Content:
    rows: int
    total: float

    def matches(self, rows: int, total: float) -> bool:
        return rows == self.rows and math.isclose(total, self.total, rel_tol=SUM_TOLERANCE, abs_tol=SUM_TOLERANCE)


@dataclass
class History:
    """Every version of the asset's days and the asset's pointer states, one per publish log row that moved one of
    its days (state 0: nothing published). Read from the catalog's tables, not through the code under test."""

    asset: str
    versions: dict[str, Version]
    contents: dict[str, Content]
    seqs: list[int]
    states: list[dict[str, str]]
    served: set[str] = field(default_factory=set)  # versions some pointer state served

    @classmethod
    def read(cls, catalog: Catalog, asset: str, days: Iterable[str], measure: str) -> History:
        versions = {v.version_id: v for day in days for v in catalog.versions_of(asset, day)}
        with catalog.engine.connect() as conn:
            rows = conn.execute(
                sa.select(publish_log.c.seq, publish_log.c.partition_key, publish_log.c.version_id)
                .where(publish_log.c.asset == asset, publish_log.c.action.in_(MOVES)).order_by(publish_log.c.seq)
            ).all()
        seqs, states, state = [0], [{}], {}
        for seq, day, version_id in rows:
            state = {**state, day: version_id}
            seqs.append(int(seq))
            states.append(state)
        served = {vid for s in states for vid in s.values()}
        # A day whose version holds no rows has no rows in a table either: as a reader sees them, it is absent.
        states = [{d: v for d, v in s.items() if v not in versions or versions[v].rows} for s in states]
        contents = {vid: content_of(v, measure) for vid, v in versions.items() if v.path}
        return cls(asset, versions, contents, seqs, states, served)

    def index_at(self, seq: int) -> int:
        """The state the pointers were in at publish log position ``seq``."""
        return bisect_right(self.seqs, seq) - 1

    def by_path(self) -> dict[str, Version]:
        return {normal_path(v.path): v for v in self.versions.values() if v.path}

    def describe(self, version_id: str | None) -> str:
        if version_id is None:
            return "nothing"
        version = self.versions.get(version_id)
        return f"{version_id} ({version.state if version else 'unknown'})"


def pointers_now(catalog: Catalog, asset: str) -> dict[str, str]:
    """The ``pointers`` table itself: each day's serving version."""
    with catalog.engine.connect() as conn:
        rows = conn.execute(sa.select(pointers.c.partition_key, pointers.c.version_id)
                            .where(pointers.c.asset == asset)).all()
    return {day: version_id for day, version_id in rows}


def content_of(version: Version, measure: str) -> Content:
    table = pq.read_table(normal_path(version.path), columns=[measure, DAY_COLUMN])
    return Content(table.num_rows, float(pc.sum(table.column(measure)).as_py() or 0.0))


def normal_path(path: Any) -> str:
    return str(path).removeprefix("file://")


@dataclass
class Judged:
    """One reader's observations judged: how many, the positions they matched, what was wrong."""

    reader: str
    observations: int = 0
    errors: list[str] = field(default_factory=list)
    violations: list[str] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)  # the publish log seq each observation matched
    rows_seen: int = 0

    @property
    def states_seen(self) -> int:
        return len(set(self.positions))


def candidates_by_files(history: History, record: dict[str, Any]) -> tuple[dict[str, set[str | None]], list[str]]:
    """Per day, the version whose file pyiceberg planned; and what is wrong with the day's files or rows."""
    by_path = history.by_path()
    problems: list[str] = []
    files_of: dict[str, list[Version]] = {}
    for path in record["files"]:
        version = by_path.get(normal_path(path))
        if version is None:
            problems.append(f"a file of no version: {path}")
            continue
        files_of.setdefault(version.partition_key, []).append(version)
    for frame in ("days", "pandas_days"):
        for day in set(record[frame]) - set(files_of):
            problems.append(f"{day}: {record[frame][day][0]} row(s) ({frame}) from no planned file")
    if record.get("null_days"):
        problems.append(f"{record['null_days']} row(s) without a {DAY_COLUMN}")
    found: dict[str, set[str | None]] = {}
    for day, planned in files_of.items():
        if len(planned) > 1:
            problems.append(f"{day}: {len(planned)} versions at once: "
                            + ", ".join(history.describe(v.version_id) for v in planned))
        for frame in ("days", "pandas_days"):
            read = record[frame].get(day, [0, 0.0])[0]
            wanted = sum(int(v.rows or 0) for v in planned)
            if read != wanted:
                problems.append(f"{day}: {read} row(s) read ({frame}), its file(s) hold {wanted}: a partial day")
        found[day] = {v.version_id for v in planned} if len(planned) == 1 else set()
    return found, problems


def candidates_by_content(history: History, record: dict[str, Any]) -> tuple[dict[str, set[str | None]], list[str]]:
    """Per day, the versions whose file holds exactly the rows read; a day that is no single version is named
    with the versions its rows add up to, when they do."""
    by_day: dict[str, list[str]] = {}
    for vid, version in history.versions.items():
        if vid in history.contents:
            by_day.setdefault(version.partition_key, []).append(vid)
    found: dict[str, set[str | None]] = {}
    problems: list[str] = []
    for day, (rows, total) in record["days"].items():
        matching = {vid for vid in by_day.get(day, []) if history.contents[vid].matches(rows, total)}
        if not matching:
            mixed = mixture(history, by_day.get(day, []), rows, total)
            what = " + ".join(history.describe(v) for v in mixed) if mixed else "no version or sum of versions"
            problems.append(f"{day}: {rows} row(s) that are no single version: {what}")
        found[day] = matching
    return found, problems


def mixture(history: History, version_ids: list[str], rows: int, total: float) -> tuple[str, ...]:
    """The versions of a day whose files together hold exactly the rows read (a reader of the folder reads them
    all), if some do."""
    for size in range(2, len(version_ids) + 1):
        for combo in combinations(sorted(version_ids), size):
            parts = [history.contents[v] for v in combo]
            if Content(sum(p.rows for p in parts), sum(p.total for p in parts)).matches(rows, total):
                return combo
    return ()


def matching_states(history: History, found: dict[str, set[str | None]]) -> list[int]:
    """The indexes of the pointer states the observation is: every day as the state has it (absent: no rows)."""
    matches = []
    for index, state in enumerate(history.states):
        days = set(state) | set(found)
        if all(state.get(day) in found.get(day, {None}) for day in days):
            matches.append(index)
    return matches


def judge(history: History, reader: str, records: list[dict[str, Any]], by_files: bool) -> Judged:
    """Every observation of one reader, in the order it made them."""
    judged = Judged(reader)
    last = 0  # the state index of the reader's last matched observation
    for record in sorted(records, key=lambda r: r["n"]):
        judged.observations += 1
        if "error" in record:
            judged.errors.append(f"#{record['n']}: {record['error']}")
            continue
        label = f"{reader} #{record['n']} (phase {record['phase']})"
        found, problems = (candidates_by_files if by_files and record.get("table") else candidates_by_content)(
            history, record)
        judged.rows_seen += sum(v[0] for v in record["days"].values())
        for day, vids in sorted(found.items()):
            never = [v for v in vids if v not in history.served]
            if vids and len(never) == len(vids):
                problems.append(f"{day}: rows of a version never published: "
                                + ", ".join(history.describe(v) for v in never))
        matches = matching_states(history, found)
        later = [i for i in matches if i >= last]
        if later:
            last = later[0]
            judged.positions.append(history.seqs[last])
            claimed = record.get("summary_seq")
            if claimed is not None and history.index_at(int(claimed)) not in matches:
                problems.append(f"the snapshot says publish log seq {claimed}, its days are the pointers at "
                                + ", ".join(str(history.seqs[i]) for i in matches))
        elif matches:
            problems.append(f"moved backwards: the pointers at seq {history.seqs[matches[-1]]}, after the reader "
                            f"had seen seq {history.seqs[last]}")
        elif not problems:
            problems.append("the pointers were never in this state: " + ", ".join(
                f"{d}={sorted(map(str, v))}" for d, v in sorted(found.items())))
        judged.violations.extend(f"{label}: {p}" for p in problems)
    return judged


def count_kinds(violations: Iterable[str]) -> Counter:
    kinds: Counter = Counter()
    for violation in violations:
        for kind in ("no single version", "never published", "versions at once", "partial day", "backwards",
                     "never in this state", "a file of no version", "snapshot says"):
            if kind in violation:
                kinds[kind] += 1
    return kinds
