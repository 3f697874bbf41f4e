"""The backfill_driver sensor's idle ticks on a real instance: once a tick of a request changed nothing, the next
ones, given the same ledger state and runs, read none of its cells and record nothing; a run that ends, or cells
another writer adds, make the next tick read and act again."""

from __future__ import annotations

import json
import uuid

import dagster as dg
import pytest
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import CellOrigin
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE
from backfill_assets.integration.jobs import BACKFILL_JOB
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.runs.runs import RUN_KEY_TAG
from backfill_assets.integration.sensors.driver import DRIVER_SENSOR
from tests.orders import DEFS

DAYS = ["2022-09-01", "2022-09-02", "2022-09-03", "2022-09-04"]


def _evaluate(env) -> list[dg.RunRequest]:
    context = dg.build_sensor_context(instance=env.instance, resources={"backfill": BackfillResource()})
    return list(DEFS.resolve_sensor_def(DRIVER_SENSOR)(context))


def _launched(env, requested: list[dg.RunRequest]) -> list[dg.DagsterRun]:
    """What the daemon does with the run requests: a run each, started."""
    runs = []
    for request in requested:
        run = dg.DagsterRun(job_name=BACKFILL_JOB, run_id=str(uuid.uuid4()), status=dg.DagsterRunStatus.STARTED,
                            tags={**request.tags, RUN_KEY_TAG: str(request.run_key)})
        env.instance.add_run(run)
        runs.append(run)
    return runs


@pytest.fixture
def cell_reads(monkeypatch) -> list[str]:
    """The requests whose cells a tick read (``Ledger.snapshot``, the one read of a tick's cells)."""
    reads: list[str] = []
    snapshot = Ledger.snapshot

    def counted(self, request_id):
        reads.append(request_id)
        return snapshot(self, request_id)

    monkeypatch.setattr(Ledger, "snapshot", counted)
    return reads


def _idle_request(env) -> tuple[str, list[dg.DagsterRun]]:
    """A request of four days, two running and every slot taken, after the tick that found nothing changed."""
    created = CliRunner().invoke(
        cli,
        ["request", "create", "--assets", DAILY_REVENUE, "--from", DAYS[0], "--to", DAYS[-1], "--max-active", "2",
         "--partitions-per-run", "1", "--reprocess", "completed", "--requested-by", "idle-test", "--json"],
        catch_exceptions=False,
    )
    request_id = json.loads(created.output)["request_id"]
    runs = _launched(env, _evaluate(env))
    assert len(runs) == 2
    assert _evaluate(env) == []  # records the runs' ids on their cells
    assert _evaluate(env) == []  # changes nothing: remembered
    return request_id, runs


def test_an_idle_tick_reads_no_cell_until_a_run_of_the_request_ends(env, cell_reads):
    request_id, runs = _idle_request(env)
    ledger = Ledger(env.catalog)
    before, cells = ledger.state(request_id), ledger.cells(request_id)
    cell_reads.clear()

    for _ in range(3):
        assert _evaluate(env) == []
    assert cell_reads == []
    # Nothing recorded either: not even the tick token moved.
    assert ledger.state(request_id) == before and ledger.cells(request_id) == cells

    env.instance.report_run_canceled(runs[0], message="cancelled by the test")
    requested = _evaluate(env)
    assert cell_reads == [request_id]
    assert [r.partition_key for r in requested] == [DAYS[2]]
    decisions = {c.partition_key: c.decision for c in ledger.cells(request_id)}
    assert decisions == {DAYS[0]: M.CELL_CANCELLED, DAYS[1]: M.SUBMITTED, DAYS[2]: M.SUBMITTED, DAYS[3]: M.PENDING}


def test_cells_another_writer_adds_end_the_idle_ticks(env, cell_reads):
    request_id, _ = _idle_request(env)
    ledger = Ledger(env.catalog)
    assert _evaluate(env) == []
    cell_reads.clear()

    ledger.add_cells(request_id, [(CUSTOMER_SNAPSHOT, DAYS[0])], CellOrigin.CASCADE)
    assert _evaluate(env) == []  # every slot is still taken
    assert cell_reads == [request_id]
    assert _evaluate(env) == []
    assert cell_reads == [request_id]  # idle again: that tick changed nothing


def test_a_pause_ends_the_idle_ticks_and_a_resume_after_it(env, cell_reads):
    request_id, _ = _idle_request(env)
    ledger = Ledger(env.catalog)
    cell_reads.clear()
    ledger.set_status(request_id, M.PAUSED)
    _evaluate(env)
    ledger.set_status(request_id, M.OPEN)
    _evaluate(env)
    assert cell_reads == [request_id, request_id]
