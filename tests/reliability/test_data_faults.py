"""Data faults: a published data file truncated, altered, replaced or deleted after publish.

Each trial publishes a fresh version of ``order_facts`` through a request, damages its file in one of several
ways, and then requires: ``reconcile ID --verify-files`` reports the gap (exit 1), ``read`` refuses with one
``error:`` line and prints no data, and a downstream ``daily_revenue`` run refuses to read it — its step fails
naming the file, nothing downstream is published or materialized. Restoring the original bytes makes every
reader accept the version again (the check is exact, not sticky).
"""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest
import sqlalchemy as sa

from backfill_assets.engine.store.parquet_files import parquet_table
from backfill_assets.engine.store.schema import reads
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS
from tests.orders import run_partitions

from . import mode
from .invariants import assert_readers_see
from .republish import assert_downstream_refuses, assert_reported_as_gap, publish_again

DAYS = ["2022-09-03", "2022-09-04"]


def _truncate_half(b: bytes, rng) -> bytes:
    return b[: len(b) // 2]


def _truncate_empty(b: bytes, rng) -> bytes:
    return b""


def _flip_byte(b: bytes, rng) -> bytes:
    i = rng.randrange(len(b))
    return b[:i] + bytes([b[i] ^ 0xFF]) + b[i + 1 :]


def _append(b: bytes, rng) -> bytes:
    return b + b"\x00" * rng.randint(1, 64)


def _valid_parquet_other_rows(b: bytes, rng) -> bytes:
    """A well-formed Parquet file of the same schema whose numbers were changed: readable, but wrong data."""
    frame = parquet_table(b).to_pandas()  # read as the warehouse does (no Arrow I/O threads left at exit)
    frame["amount_cny"] = frame["amount_cny"] * 1.01
    out = io.BytesIO()
    frame.to_parquet(out, index=False)
    return out.getvalue()


ALTERATIONS = {
    "truncated to half": _truncate_half,
    "truncated to empty": _truncate_empty,
    "one byte flipped": _flip_byte,
    "bytes appended": _append,
    "replaced by valid parquet with other numbers": _valid_parquet_other_rows,
    "deleted": None,
}


@pytest.fixture(scope="module")
def published_env(module_envs):
    env = module_envs("data")
    runs = run_partitions(env.instance, DAYS, assets=[RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE])
    assert all(r.success for r in runs), runs
    return env


def alter_once(env, trial: int, how: str) -> None:
    rng = random.Random(trial)
    request_id, day, version = publish_again(env, trial, DAYS)
    clean = env.cli_json("reconcile", request_id, "--verify-files")
    assert clean["complete"] and clean["gaps"] == [], "a freshly published file must verify"

    path = Path(version.path)
    original = path.read_bytes()
    alteration = ALTERATIONS[how]
    if alteration is None:
        path.unlink()
    else:
        altered = alteration(original, rng)
        assert altered != original
        path.write_bytes(altered)

    # reconcile --verify-files reports it as a gap (and exits 1)
    assert_reported_as_gap(env, request_id, version, "data file does not match the catalog")
    # the `read` CLI refuses in one line and prints no data
    read = env.cli("read", ORDER_FACTS, day, "--format", "json")
    lines = read.stderr.splitlines()
    assert read.exit_code == 2 and read.stdout == "", f"read served data: {read.output[:200]}"
    assert len(lines) == 1 and lines[0].startswith("error: ") and str(path) in lines[0], lines
    assert ("missing" if alteration is None else "does not match the catalog") in lines[0], lines[0]

    # a downstream run refuses to read it: fails naming the file, publishes and materializes nothing
    run = assert_downstream_refuses(env, day, str(path))
    [attempt] = [v for v in env.catalog.versions_of(DAILY_REVENUE, day) if v.dagster_run_id == run.run_id]
    assert attempt.state == "ABANDONED" and str(path) in attempt.error, (attempt.state, attempt.error)
    assert not any(r.upstream_version_id == version.version_id for r in _reads_by(env, attempt.version_id))

    # restoring the bytes restores every reader: the check is exact
    path.write_bytes(original)
    assert_readers_see(env, ORDER_FACTS, day, {version.version_id})
    assert env.cli_json("reconcile", request_id, "--verify-files")["gaps"] == []


def _reads_by(env, consumer_version_id: str):
    with env.catalog.engine.connect() as conn:
        return conn.execute(sa.select(reads).where(reads.c.consumer_version_id == consumer_version_id)).all()


@pytest.mark.timeout(mode.timeout(per_trial_seconds=20))
def test_a_published_file_altered_after_publish_is_refused_by_every_reader_and_reported(published_env, trials):
    kinds = list(ALTERATIONS)
    with trials("data.altered_after_publish") as klass:
        for i in range(max(mode.TRIALS, len(kinds))):  # every kind of damage at least once
            how = kinds[i % len(kinds)]
            with klass.trial(f"{i} ({how})"):
                alter_once(published_env, i, how)
    assert klass.result.trials > 0, "no trial ran: the class proves nothing"
