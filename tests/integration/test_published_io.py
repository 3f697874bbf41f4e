"""An ordinary Dagster asset downstream of a gated one reads the day's published version through the library's IO
manager: the rows the catalog serves, a day with nothing published refused naming the day, every read recorded so
``rollback`` lists the asset among the consumers of the version it took off."""

from __future__ import annotations

import dagster as dg
import pytest

from backfill_assets import backfills_for_instance
from backfill_assets.integration.jobs import BACKFILL_JOB
from tests.mixed_project import defs

DAY, UNPUBLISHED_DAY = "2024-03-31", "2024-04-01"
CONSUMER = "external:asset:usage_report"


@pytest.fixture
def instance(tmp_path, monkeypatch):
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))  # the catalog and the warehouse live under it
    with dg.instance_for_test(temp_dir=str(tmp_path)) as made:
        yield made


def _publish(instance: dg.DagsterInstance, day: str) -> None:
    assert defs.resolve_job_def(BACKFILL_JOB).execute_in_process(partition_key=day, instance=instance).success


def _report(instance: dg.DagsterInstance, day: str) -> dg.ExecuteInProcessResult:
    return defs.resolve_job_def("usage_reports").execute_in_process(
        partition_key=day, instance=instance, raise_on_error=False
    )


def test_an_ordinary_asset_reads_the_published_day_and_the_read_is_recorded(instance):
    _publish(instance, DAY)
    result = _report(instance, DAY)
    assert result.success
    # Three meters, 23 hours of 0.5 kWh on the day Berlin moves its clocks forward.
    assert result.output_for_node("usage_report") == pytest.approx(3 * 23 * 0.5)
    service = backfills_for_instance(defs, instance)
    serving = service.serving("daily_usage", DAY)
    [read] = [c for c in service.catalog.consumers_of(serving.version_id) if c.consumer == CONSUMER]
    assert read.consumer_run_id == result.run_id


def test_a_day_with_nothing_published_fails_the_step_naming_the_day(instance):
    _publish(instance, DAY)
    result = _report(instance, UNPUBLISHED_DAY)
    assert not result.success
    failure = next(e for e in result.all_events if e.is_step_failure)
    message = failure.step_failure_data.error.message
    assert f"usage_report reads daily_usage {UNPUBLISHED_DAY}: nothing is published for that day" in message


def test_rollback_lists_the_ordinary_asset_among_the_readers_of_the_version_it_takes_off(instance):
    _publish(instance, DAY)
    _publish(instance, DAY)  # a second version of the day, published over the first
    report = _report(instance, DAY)
    assert report.success
    service = backfills_for_instance(defs, instance)
    bad = service.serving("daily_usage", DAY).version_id
    change = service.rollback("daily_usage", DAY, reason="the second load was wrong")
    assert change.taken_off == bad and change.serving != bad
    assert (CONSUMER, report.run_id) in {(c.consumer, c.consumer_run_id) for c in change.consumers}
    # The next read gets the version serving now.
    again = _report(instance, DAY)
    assert again.success
    readers = service.catalog.consumers_of(change.serving)
    assert (CONSUMER, again.run_id) in {(c.consumer, c.consumer_run_id) for c in readers}
