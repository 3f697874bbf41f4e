"""The engine's promises, the same test on both example code locations (orders in Asia/Shanghai; web_visits in
America/New_York across a DST change, with a two-upstream asset and user audits), through the public API and CLI."""

from __future__ import annotations

import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import iso
from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.wap.audit import check_names
from tests.driver_harness import drive


def _defect(day: str, asset: str) -> dict:
    return {day: {"ops": {asset: {"config": {"defect": "drop_rows"}}}}}


def _with_ancestors(graph: AssetGraph, asset: str) -> list[str]:
    found, todo = {asset}, [asset]
    while todo:
        for upstream in graph[todo.pop()].upstream:
            if upstream not in found:
                found.add(upstream)
                todo.append(upstream)
    return graph.topological(found)


def test_production_publishes_every_data_asset_with_every_audit_passed(denv):
    graph = denv.domain.graph
    runs = denv.run(list(denv.domain.days), list(graph.data_assets))
    assert all(r.success for r in runs), [r.failure for r in runs]
    for day in denv.domain.days:
        interval = graph.calendar.interval(day)
        for asset in graph.data_assets:
            version = denv.catalog.current(asset, day)
            assert version is not None, (asset, day)
            assert [c["name"] for c in version.checks] == [n for n, _ in check_names(graph[asset])]
            assert all(c["passed"] for c in version.checks), version.checks
            # The version's interval is the business day's, however long (23 h and 25 h on DST days).
            assert (version.interval_start, version.interval_end) == (iso(interval.start_utc), iso(interval.end_utc))


def test_a_defect_is_rejected_and_the_previous_version_keeps_serving(denv):
    day, asset = denv.domain.days[1], denv.domain.defect_asset
    graph = denv.domain.graph
    assert all(r.success for r in denv.run([day], _with_ancestors(graph, asset)))
    serving = denv.catalog.current(asset, day)
    [bad] = denv.run([day], [asset], run_config_for=_defect(day, asset))
    assert not bad.success and "REJECTED" in bad.failure
    latest = denv.catalog.versions_of(asset, day)[-1]
    assert latest.state == VersionState.REJECTED.value
    assert "row_count" in [c["name"] for c in latest.checks if not c["passed"]]
    assert denv.catalog.current(asset, day).version_id == serving.version_id


def test_a_request_with_reprocess_failed_reruns_only_what_failed_and_reconciles(denv):
    domain, graph = denv.domain, denv.domain.graph
    days, asset = domain.days, domain.defect_asset
    assert all(r.success for r in denv.run(list(days), _with_ancestors(graph, asset)))
    [bad] = denv.run([days[1]], [asset], run_config_for=_defect(days[1], asset))
    assert not bad.success
    created = denv.cli("request", "create", "--assets", asset, "--from", days[0], "--to", days[-1],
                       "--reprocess", "failed", "--reason", f"{domain.name}: re-run the rejected day")
    drive(denv, created["request_id"], defs=domain.defs)
    report = denv.cli("reconcile", created["request_id"])
    decisions = {c["partition_key"]: c["decision"] for c in report["cells"]}
    assert decisions == {days[0]: M.SKIPPED, days[1]: M.PUBLISHED, days[2]: M.SKIPPED}
    assert report["complete"] and report["totals"]["duplicate_publishes"] == 0 and report["totals"]["gaps"] == 0


def test_rollback_restores_the_previous_verified_version(denv):
    day = denv.domain.days[0]
    asset = denv.domain.source_asset
    [first] = denv.run([day], [asset])
    [second] = denv.run([day], [asset])
    assert first.success and second.success
    before = denv.catalog.versions_of(asset, day)
    rolled = denv.cli("rollback", asset, day, "--reason", "test")
    assert rolled["serving"] == before[0].version_id
    assert denv.catalog.current(asset, day).version_id == before[0].version_id


def test_reconcile_says_whether_a_recomputation_read_a_changed_source(denv):
    domain = denv.domain
    day, asset = domain.days[2], domain.source_asset
    assert denv.run([day], [asset])[0].success
    if domain.change_source is not None:
        domain.change_source(day, day)
    created = denv.cli("request", "create", "--assets", asset, "--from", day, "--to", day,
                       "--reprocess", "completed", "--reason", "source check")
    drive(denv, created["request_id"], defs=domain.defs)
    [cell] = denv.cli("reconcile", created["request_id"])["cells"]
    [version] = [v for v in cell["versions"] if v["state"] == VersionState.PUBLISHED.value]
    assert version["recomputed_on_current_upstream"] is (domain.change_source is not None)


def test_a_missing_input_names_the_asset_and_the_interval_in_business_time(denv):
    graph = denv.domain.graph
    day = denv.domain.days[1]
    downstream = next(a for a in graph.data_assets if graph[a].upstream)
    [run] = denv.run([day], [downstream])
    assert not run.success
    interval = graph.calendar.interval(day)
    assert f"{downstream} {interval.label}" in run.failure
    assert graph.calendar.tz_name in run.failure


@pytest.mark.parametrize("bad", [["request", "create", "--assets", "nope", "--from", "2023-03-11", "--to",
                                  "2023-03-11"], ["versions", "nope", "2023-03-11"]])
def test_unknown_assets_are_refused_naming_the_code_locations_own(denv, bad):
    output = denv.cli(*bad, expect_exit=2)
    assert "unknown asset 'nope'" in output
    assert denv.domain.graph.data_assets[0] in output


def test_a_batched_request_gates_each_day_alone_in_one_run(denv):
    graph, days = denv.domain.graph, denv.domain.days
    assets = graph.batchable_assets
    created = denv.cli("request", "create", "--assets", ",".join(assets), "--from", days[0], "--to", days[-1],
                       "--partitions-per-run", str(len(days)), "--max-active", "1", "--reason", "batched")
    drive(denv, created["request_id"], defs=denv.domain.defs)
    report = denv.cli("reconcile", created["request_id"])
    assert report["complete"] and report["totals"]["published"] == len(assets) * len(days)
    assert report["totals"]["runs_created"] == 1 and report["totals"]["duplicate_publishes"] == 0
    for day in days:
        for asset in assets:
            version = denv.catalog.current(asset, day)
            assert [c["name"] for c in version.checks] == [n for n, _ in check_names(graph[asset])]
