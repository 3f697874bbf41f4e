"""A held run of a UI backfill whose release was lost is released by the fallback, reading what the queue reads."""

from __future__ import annotations

import dagster as dg
import sqlalchemy as sa

from backfill_assets.engine.model import tags as T
from backfill_assets.integration.runs.coordinator import HOLD_FALLBACK_SECONDS, release_stale_holds
from tests.homes import shipped_storage

BACKFILL = "abcdefgh"


@dg.op
def noop() -> None:
    pass


@dg.job
def held_job():
    noop()


def _origin():
    """A queued run must name the code location it comes from (Dagster checks); no public API builds one."""
    from dagster._core.remote_origin import RegisteredCodeLocationOrigin, RemoteJobOrigin, RemoteRepositoryOrigin

    return RemoteJobOrigin(RemoteRepositoryOrigin(RegisteredCodeLocationOrigin("here"), "__repository__"), "held_job")


def _write_run_body(instance: dg.DagsterInstance, run: dg.DagsterRun) -> None:
    """What a writer holding an older copy of the run does through Dagster's add_run_tags: the run's body
    rewritten whole, the tag index left as it was. (Also how the test queues its run: nothing launches it.)"""
    with instance.run_storage.connect() as conn:
        conn.execute(sa.text("UPDATE runs SET run_body = :body, status = 'QUEUED' WHERE run_id = :run_id"),
                     {"body": dg.serialize_value(run), "run_id": run.run_id})


def test_a_release_lost_to_a_stale_tag_write_is_released_by_the_fallback(tmp_path):
    with dg.instance_for_test(temp_dir=str(tmp_path), overrides=shipped_storage()) as instance:
        run = instance.create_run_for_job(
            held_job, remote_job_origin=_origin(), tags={T.DAGSTER_BACKFILL: BACKFILL, T.QUEUE_HOLD: T.HELD}
        )
        _write_run_body(instance, run)
        stale = instance.get_run_by_id(run.run_id)
        instance.add_run_tags(run.run_id, {T.QUEUE_HOLD: T.RELEASED})  # the coordinator's release
        _write_run_body(instance, stale.with_tags({**stale.tags, "test/hold": "released"}))  # lost to it
        assert instance.get_run_by_id(run.run_id).tags[T.QUEUE_HOLD] == T.HELD  # what the queue reads
        held_by_index = instance.get_run_records(dg.RunsFilter(tags={T.QUEUE_HOLD: T.HELD}))
        assert held_by_index == []  # what a tag query reads

        created = instance.get_run_record_by_id(run.run_id).create_timestamp.timestamp()
        assert release_stale_holds(instance, BACKFILL, created + 1) == 0  # not stale yet
        assert release_stale_holds(instance, BACKFILL, created + HOLD_FALLBACK_SECONDS + 1) == 1
        assert instance.get_run_by_id(run.run_id).tags[T.QUEUE_HOLD] == T.RELEASED
