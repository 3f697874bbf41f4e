"""Reconcile reports what the catalog says now: rolled-back cells, side effects, source-reading recomputes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.cells import CellUpdate
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.identity import RunIdentity
from backfill_assets.engine.model.retries import StepRetries
from backfill_assets.engine.plan.reconcile import count_decisions, decisions_now, reconcile
from backfill_assets.engine.plan.reconcile_downstream import SideEffectStatus
from backfill_assets.engine.plan.reconcile_records import CELL_ROLLED_BACK, NOT_REPRODUCIBLE, ReportTotals
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.engine.store.outbox import send_once
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from tests.orders import GRAPH
from tests.specs import spec_of

from .catalog_helpers import KEY, PASSED, identity

REQUEST_ID = "req-20221101-0a0b0c0d"
NEWEST = "2022-10-31"


@pytest.fixture
def catalog(tmp_path) -> Catalog:
    return Catalog(f"sqlite:///{tmp_path}/catalog.db")


def _request(catalog: Catalog, asset: str, downstream: str = "none") -> Ledger:
    spec = spec_of(GRAPH, NEWEST, assets=asset, first=KEY, last=KEY, reprocess="completed",
                        downstream=downstream, requested_by="tester")
    ledger = Ledger(catalog)
    ledger.create(REQUEST_ID, spec, "git-abc123", spec.excluded_cells(GRAPH))
    return ledger


def _publish(
    catalog: Catalog, ident: RunIdentity, inputs: dict | None = None, fingerprint: str | None = None
) -> str:
    version = catalog.begin_version(ident)
    catalog.mark_verifying(version.version_id, path=f"/w/{version.version_id}/data.parquet", rows=10,
                           sha256="0" * 64, stats={}, input_versions=inputs or {}, source_fingerprint=fingerprint)
    catalog.publish(version.version_id, PASSED)
    return version.version_id


def _report(catalog: Catalog):
    return reconcile(catalog, REQUEST_ID, GRAPH, run_status_of=lambda run_id: "SUCCESS")


def _mark_published(ledger: Ledger, asset: str, run_id: str) -> None:
    ledger.update_cells(REQUEST_ID, [CellUpdate(asset, KEY, {"decision": M.PUBLISHED, "reason": "published",
                                                             "dagster_run_id": run_id})])


def test_a_rolled_back_cell_is_counted_as_rolled_back_not_published(catalog):
    ledger = _request(catalog, ORDER_FACTS)
    _publish(catalog, identity("run-prod"))
    bad = _publish(catalog, identity("run-backfill", request_id=REQUEST_ID))
    _mark_published(ledger, ORDER_FACTS, "run-backfill")
    assert _report(catalog).totals.published == 1

    catalog.rollback(ORDER_FACTS, KEY, reason="wrong numbers")

    report = _report(catalog)
    assert (report.totals.published, report.totals.rolled_back) == (0, 1)
    [cell] = report.cells
    assert cell.decision == CELL_ROLLED_BACK and bad in cell.reason
    assert report.complete is False
    # `request show` and `request list` say the same.
    [shown] = decisions_now(catalog, REQUEST_ID, ledger.cells(REQUEST_ID))
    assert shown.decision == CELL_ROLLED_BACK and count_decisions([shown.decision])["rolled_back"] == 1


def test_a_superseded_cell_still_counts_as_published(catalog):
    ledger = _request(catalog, ORDER_FACTS)
    _publish(catalog, identity("run-backfill", request_id=REQUEST_ID))
    _mark_published(ledger, ORDER_FACTS, "run-backfill")
    _publish(catalog, identity("run-next-production"))  # a later normal publish, not a rollback
    report = _report(catalog)
    assert (report.totals.published, report.totals.rolled_back, report.complete) == (1, 0, True)


def test_a_side_effect_asset_is_never_stale_its_deliveries_are_reported(catalog, tmp_path):
    ledger = _request(catalog, DAILY_REVENUE, downstream="none")
    old = _publish(catalog, identity("run-prod", asset=DAILY_REVENUE))
    sent: list[dict] = []
    send_once(catalog, sent.append, "alert-key-1", asset=REVENUE_ALERT, partition_key=KEY,
              payload={"total": 1, "source_version_id": old}, dagster_run_id="run-prod", request_id=None)
    assert sent == [{"idempotency_key": "alert-key-1", "total": 1, "source_version_id": old}]
    new = _publish(catalog, identity("run-backfill", asset=DAILY_REVENUE, request_id=REQUEST_ID))
    _mark_published(ledger, DAILY_REVENUE, "run-backfill")

    report = _report(catalog)

    assert REVENUE_ALERT not in {s.asset for s in report.stale_downstream}
    [effect] = [e for e in report.side_effects if e.asset == REVENUE_ALERT]
    assert effect.partition_key == KEY and effect.upstream_version_id == new
    assert effect.status is SideEffectStatus.SENT_EARLIER
    assert effect.as_dict()["status"].startswith("sent earlier")
    [delivery] = effect.deliveries
    assert delivery.source_version_id == old and delivery.sent_at


@pytest.mark.parametrize(
    "before, after, answer",
    [
        ("source-before", "source-after", True),  # recomputed from changed source data: inputs {} on both sides
        ("source-same", "source-same", False),
        (None, "source-now", NOT_REPRODUCIBLE),  # no fingerprint to compare: neither yes nor no
    ],
    ids=["source-changed", "source-same", "not-fingerprinted"],
)
def test_a_source_reading_version_compares_its_source_fingerprint(catalog, before, after, answer):
    _request(catalog, RAW_ORDERS)
    _publish(catalog, identity("run-prod", asset=RAW_ORDERS), fingerprint=before)
    _publish(catalog, identity("run-backfill", asset=RAW_ORDERS, request_id=REQUEST_ID), fingerprint=after)
    [version] = _report(catalog).cells[0].versions
    assert version.recomputed_on_current_upstream == answer and type(version.recomputed_on_current_upstream) is type(
        answer
    )


def test_a_downstream_version_compares_the_upstream_versions_it_read(catalog):
    _request(catalog, DAILY_REVENUE)
    ident = identity("run-prod", asset=DAILY_REVENUE)
    _publish(catalog, ident, inputs={f"{ORDER_FACTS}/{KEY}": "order_facts/v1"})
    backfill = replace(ident, logical_run_id="run-backfill", dagster_run_id="run-backfill", request_id=REQUEST_ID)
    _publish(catalog, backfill, inputs={f"{ORDER_FACTS}/{KEY}": "order_facts/v2"})
    [version] = _report(catalog).cells[0].versions
    assert version.recomputed_on_current_upstream is True


def test_a_submitted_cell_whose_run_is_on_a_new_attempt_is_still_retrying(catalog):
    ledger = _request(catalog, ORDER_FACTS)
    ledger.update_cells(REQUEST_ID, [CellUpdate(ORDER_FACTS, KEY, {
        "decision": M.SUBMITTED, "dagster_run_id": "run-1", "run_key": f"{REQUEST_ID}/{KEY}/1"})])
    first = catalog.begin_version(identity("run-1", request_id=REQUEST_ID))
    catalog.abandon(first.version_id, "step died")
    assert _report(catalog).totals.still_retrying == 0  # the attempt ended, no new one yet

    # Dagster's retry: a new run of the same logical run writes attempt 2 while the cell is still submitted.
    retry = replace(identity("run-1", request_id=REQUEST_ID), dagster_run_id="run-1-retry")
    catalog.begin_version(retry)
    report = _report(catalog)
    assert report.totals.still_retrying == 1 and report.totals.in_flight == 1
    assert [v.attempt_no for v in report.cells[0].versions] == [1, 2]


@pytest.mark.parametrize("max_retries, failed, retrying", [
    (0, 1, False),  # never retried: the run fails with its first attempt
    (2, 2, True), (2, 3, False),  # the default
    (4, 4, True), (4, 5, False),
])
def test_a_failed_attempt_is_still_retrying_while_the_asset_s_own_retries_last(catalog, max_retries, failed,
                                                                                retrying):
    graph = AssetGraph(GRAPH.calendar, [
        replace(s, retries=StepRetries(max_retries)) if s.name == ORDER_FACTS else s for s in GRAPH
    ])
    ledger = _request(catalog, ORDER_FACTS)
    ledger.update_cells(REQUEST_ID, [CellUpdate(ORDER_FACTS, KEY, {
        "decision": M.SUBMITTED, "dagster_run_id": "run-1", "run_key": f"{REQUEST_ID}/{KEY}/1"})])
    for _ in range(failed):  # each step retry is a new attempt of the same logical run, in the same Dagster run
        catalog.abandon(catalog.begin_version(identity("run-1", request_id=REQUEST_ID)).version_id, "step died")

    def totals(status: str) -> ReportTotals:
        return reconcile(catalog, REQUEST_ID, graph, run_status_of=lambda run_id: status).totals

    assert totals("STARTED").still_retrying == int(retrying)
    assert totals("FAILURE").still_retrying == 0  # the run has ended: no try is coming
    report = reconcile(catalog, REQUEST_ID, graph, run_status_of=lambda run_id: "STARTED")
    assert [v.attempt_no for v in report.cells[0].versions] == list(range(1, failed + 1))


def test_a_first_attempt_computing_is_in_flight_not_retrying(catalog):
    ledger = _request(catalog, ORDER_FACTS)
    ledger.update_cells(REQUEST_ID, [CellUpdate(ORDER_FACTS, KEY, {
        "decision": M.SUBMITTED, "dagster_run_id": "run-1", "run_key": f"{REQUEST_ID}/{KEY}/1"})])
    catalog.begin_version(identity("run-1", request_id=REQUEST_ID))
    running = reconcile(catalog, REQUEST_ID, GRAPH, run_status_of=lambda run_id: "STARTED").totals
    assert (running.in_flight, running.still_retrying) == (1, 0)


def test_a_cell_rolled_back_then_purged_before_it_settled_is_reported_rolled_back(catalog):
    # The request's version published, was rolled back, and gc purged its files before the driver settled the
    # cell: the ledger then says "failed (run success, version PURGED)"; the publish log says it was rolled back.
    ledger = _request(catalog, ORDER_FACTS)
    _publish(catalog, identity("run-prod"))
    bad = _publish(catalog, identity("run-backfill", request_id=REQUEST_ID))
    catalog.rollback(ORDER_FACTS, KEY, reason="wrong numbers")
    catalog.purge(bad)
    ledger.update_cells(REQUEST_ID, [CellUpdate(ORDER_FACTS, KEY, {
        "decision": M.FAILED, "reason": "run success, version PURGED", "dagster_run_id": "run-backfill"})])

    report = _report(catalog)
    [cell] = report.cells
    assert cell.decision == CELL_ROLLED_BACK and bad in cell.reason, (cell.decision, cell.reason)
    assert (report.totals.rolled_back, report.totals.failed) == (1, 0)
    [shown] = decisions_now(catalog, REQUEST_ID, ledger.cells(REQUEST_ID))
    assert shown.decision == CELL_ROLLED_BACK


def test_a_cell_published_then_superseded_and_purged_is_not_called_rolled_back(catalog):
    ledger = _request(catalog, ORDER_FACTS)
    mine = _publish(catalog, identity("run-backfill", request_id=REQUEST_ID))
    _mark_published(ledger, ORDER_FACTS, "run-backfill")
    _publish(catalog, identity("run-prod"))
    catalog.purge(mine)
    [cell] = _report(catalog).cells
    assert cell.decision == M.PUBLISHED
