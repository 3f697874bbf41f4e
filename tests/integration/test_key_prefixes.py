"""Asset keys with a prefix: two code locations on one instance and one catalog each declare ``daily_usage`` under
their own prefix, publish the same day and read their own, through every door (the service, the CLI, the Launchpad's
request job, the Iceberg table, the warehouse path, an ordinary asset's IO manager); bad prefixes are refused."""

from __future__ import annotations

import json

import dagster as dg
import pandas as pd
import pytest
from click.testing import CliRunner
from pyiceberg.catalog import load_catalog

from backfill_assets import (
    AccessPolicy,
    BusinessCalendar,
    InvalidInput,
    RequestInput,
    backfills_for_instance,
    gated_asset,
    graph_of,
    side_effect_asset,
)
from backfill_assets.cli import cli
from backfill_assets.engine.model.errors import UnsafeName
from backfill_assets.engine.model.identity import parse_version_id
from backfill_assets.integration.api import backfill_definitions
from backfill_assets.integration.jobs import BACKFILL_JOB
from backfill_assets.integration.request_jobs import REQUEST_JOB, REQUEST_OP
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.integration.sensors.driver import DRIVER_SENSOR
from backfill_assets.integration.sensors.propagation import propagate_once
from tests.driver_harness import drive
from tests.locations import prefixed_berlin as berlin
from tests.locations import prefixed_new_york as new_york

DAY = "2024-03-31"
BERLIN, NEW_YORK = "berlin/daily_usage", "new_york/daily_usage"


def _publish(defs: dg.Definitions, instance: dg.DagsterInstance) -> None:
    assert defs.resolve_job_def(BACKFILL_JOB).execute_in_process(partition_key=DAY, instance=instance).success


def _cli(*args: str) -> str:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def test_two_locations_publish_the_same_name_and_day_under_their_prefixes_and_each_reads_its_own(env):
    _publish(berlin.defs, env.instance)
    _publish(new_york.defs, env.instance)
    mine = backfills_for_instance(berlin.defs, env.instance)
    theirs = backfills_for_instance(new_york.defs, env.instance)
    assert mine.read(BERLIN, DAY).frame["kwh"].tolist() == [berlin.KWH, berlin.KWH]
    assert theirs.read(NEW_YORK, DAY).frame["kwh"].tolist() == [new_york.KWH, new_york.KWH]
    # The downstream transform took its prefixed upstream by its name alone, and recorded it by its whole key.
    total = mine.read("berlin/daily_total", DAY)
    assert total.frame["kwh"].tolist() == [2 * berlin.KWH]
    assert list(total.version.input_versions) == [f"{BERLIN}/{DAY}"]
    version = mine.serving(BERLIN, DAY)
    assert parse_version_id(version.version_id)[:2] == (BERLIN, DAY)
    assert f"/berlin/daily_usage/date={DAY}/" in version.path
    assert theirs.serving(NEW_YORK, DAY).path != version.path


def test_the_published_iceberg_tables_are_named_by_the_whole_key(env):
    _publish(berlin.defs, env.instance)
    _publish(new_york.defs, env.instance)
    catalog = load_catalog("backfill_assets", type="sql", uri=f"sqlite:///{env.home}/iceberg_catalog.db")
    assert catalog.load_table("published.berlin__daily_usage").scan().to_pandas()["kwh"].tolist() == [1.0, 1.0]
    assert catalog.load_table("published.new_york__daily_usage").scan().to_pandas()["kwh"].tolist() == [2.0, 2.0]


def test_the_cli_takes_prefixed_names_for_versions_read_and_a_cell(env):
    _publish(berlin.defs, env.instance)
    location = ["-m", "tests.locations.prefixed_berlin"]
    [row] = json.loads(_cli(*location, "versions", BERLIN, DAY, "--json"))
    assert row["version_id"].startswith(f"{BERLIN}/{DAY}/")
    records = json.loads(_cli(*location, "read", BERLIN, DAY, "--format", "json"))
    assert [r["kwh"] for r in records] == [berlin.KWH, berlin.KWH]
    planned = json.loads(_cli(*location, "request", "create", "--assets", BERLIN, "--from", DAY, "--to", DAY,
                              "--reason", "prefixed", "--dry-run", "--json"))
    assert [(c["asset"], c["action"]) for c in planned["cells"]] == [(BERLIN, "skip")]
    created = json.loads(_cli(*location, "request", "create", "--assets", BERLIN, "--from", DAY, "--to", DAY,
                              "--reason", "prefixed", "--reprocess", "completed", "--json"))
    cell = json.loads(_cli(*location, "request", "show", created["request_id"], "--cell", f"{BERLIN}/{DAY}", "--json"))
    assert (cell["asset"], cell["partition_key"], cell["in_request"]) == (BERLIN, DAY, True)


def test_a_request_of_a_prefixed_asset_is_driven_to_published(env):
    service = backfills_for_instance(berlin.defs, env.instance)
    record = service.create(RequestInput(assets=[BERLIN, "berlin/daily_total"], from_day=DAY, to_day=DAY,
                                         reason="prefixed request"))
    drive(env, record.request.request_id, defs=berlin.defs)
    assert service.show(record.request.request_id).request.status == "completed"
    assert service.serving("berlin/daily_total", DAY) is not None


def test_a_batched_request_of_prefixed_assets_publishes_every_day(env):
    service = backfills_for_instance(berlin.defs, env.instance)
    days = ["2024-03-30", DAY, "2024-04-01"]
    record = service.create(RequestInput(assets=[BERLIN, "berlin/daily_total"], from_day=days[0], to_day=days[-1],
                                         partitions_per_run=3, reason="one chunk run"))
    drive(env, record.request.request_id, defs=berlin.defs)
    assert service.show(record.request.request_id).request.status == "completed"
    assert [service.read("berlin/daily_total", d).frame["kwh"].tolist() for d in days] == [[2 * berlin.KWH]] * 3


def test_the_launchpad_request_job_takes_a_prefixed_asset(env):
    run = berlin.defs.resolve_job_def(REQUEST_JOB).execute_in_process(
        run_config={"ops": {REQUEST_OP: {"config": {"assets": [BERLIN], "from_day": DAY, "to_day": DAY,
                                                    "reason": "from the Launchpad"}}}},
        instance=env.instance, tags={"dagster/user": "ana@example.com"},
    )
    assert run.success
    [summary] = backfills_for_instance(berlin.defs, env.instance).list()
    shown = summary.as_dict()
    assert shown["assets"] == [BERLIN] and shown["requested_by"] == "ana@example.com"


def test_an_ordinary_asset_reads_a_prefixed_gated_asset_through_the_io_manager(env):
    _publish(berlin.defs, env.instance)
    result = berlin.defs.resolve_job_def("usage_reports").execute_in_process(partition_key=DAY, instance=env.instance)
    assert result.output_for_node("usage_report") == pytest.approx(2 * berlin.KWH)


CALENDAR = BusinessCalendar("Europe/Berlin", "2024-01-01")


@pytest.mark.parametrize(
    ("key_prefix", "name", "error", "match"),
    [
        ("Berlin", "usage", UnsafeName, "segment 'Berlin' must match"),
        ("..", "usage", UnsafeName, "contains '..'"),
        (["a", ""], "usage", UnsafeName, "is empty"),
        ("a_b", "c__d", UnsafeName, "contains '__'"),
        ("berlin", "a/b", InvalidInput, "must be one segment; put the rest in key_prefix"),
        (3, "usage", InvalidInput, "key_prefix must be a string or a list of strings"),
        ("x" * 60, "usage", UnsafeName, "must fit 63 characters"),
    ],
)
def test_a_bad_key_prefix_is_refused_when_declared(key_prefix, name, error, match):
    with pytest.raises(error, match=match):
        @gated_asset(calendar=CALENDAR, key_prefix=key_prefix, name=name)
        def usage(interval) -> pd.DataFrame:
            return pd.DataFrame({"kwh": [1.0]})


def test_two_upstreams_sharing_a_parameter_name_are_refused():
    with pytest.raises(InvalidInput, match="would both be the parameter 'daily_usage'"):
        @gated_asset(calendar=CALENDAR, key_prefix="all", deps=[BERLIN, NEW_YORK])
        def both(daily_usage: pd.DataFrame) -> pd.DataFrame:
            return daily_usage


def test_a_gated_asset_named_in_deps_by_its_asset_key_is_refused_with_the_form_to_use():
    @gated_asset(calendar=CALENDAR, key_prefix="berlin", deps=[dg.AssetKey(["berlin", "daily_usage"])], name="other")
    def other(interval) -> pd.DataFrame:
        return pd.DataFrame({"kwh": [1.0]})

    with pytest.raises(InvalidInput, match="name it by its object or as deps=\\['berlin/daily_usage'\\]"):
        backfill_definitions(assets=[berlin.daily_usage, other], location="berlin")


# Two locations on one catalog share its ledger and its publish log: each location's sensors act on its own.


def _driver(defs: dg.Definitions, instance: dg.DagsterInstance) -> list:
    context = dg.build_sensor_context(instance=instance, resources={"backfill": BackfillResource()})
    return list(defs.resolve_sensor_def(DRIVER_SENSOR)(context))


def test_each_locations_driver_drives_only_its_own_requests(env):
    service = backfills_for_instance(berlin.defs, env.instance)
    service.create(RequestInput(assets=[BERLIN], from_day=DAY, to_day=DAY, reason="Berlin's"))
    assert _driver(new_york.defs, env.instance) == []  # neither a run of Berlin's asset nor an error
    [run_request] = _driver(berlin.defs, env.instance)
    assert run_request.asset_selection == [dg.AssetKey(["berlin", "daily_usage"])]


def test_each_locations_propagation_reads_every_publish_and_cascades_its_own_lineage(env):
    service = backfills_for_instance(berlin.defs, env.instance)
    created = service.create(RequestInput(assets=[BERLIN], from_day=DAY, to_day=DAY, downstream="cascade",
                                          reason="cascade to the total"))
    request_id = created.request.request_id
    drive(env, request_id, defs=berlin.defs, propagate=False, max_ticks=3)
    assert service.serving(BERLIN, DAY) is not None
    # New York's sensor sees Berlin's publish first: it neither fails on it nor takes it from Berlin's sensor.
    assert propagate_once(graph_of(new_york.defs), env.catalog)["cascaded"] == 0
    assert propagate_once(graph_of(berlin.defs), env.catalog)["cascaded"] == 1
    assert ("berlin/daily_total", DAY) in {c.key for c in service.show(request_id).cells}


def test_a_locations_gc_leaves_another_locations_versions(env):
    for _ in range(3):  # New York's first version of the day is superseded and no rollback's target
        _publish(new_york.defs, env.instance)
    backfills_for_instance(berlin.defs, env.instance).gc(0)  # Berlin's retention, Berlin's tables
    theirs = backfills_for_instance(new_york.defs, env.instance)
    assert [v.state for v in theirs.versions(NEW_YORK, DAY)] == ["SUPERSEDED", "SUPERSEDED", "PUBLISHED"]
    theirs.gc(0)
    assert [v.state for v in theirs.versions(NEW_YORK, DAY)] == ["PURGED", "SUPERSEDED", "PUBLISHED"]


SENT: list[dict] = []


def test_a_prefixed_side_effect_is_authorized_by_its_whole_name_and_delivers_once(env):
    @side_effect_asset(calendar=berlin.CALENDAR, key_prefix="berlin", deps=[berlin.daily_usage],
                       deliver=lambda payload: SENT.append(payload))
    def usage_alert(interval, daily_usage: pd.DataFrame) -> dict:
        return {"day": interval.key, "kwh": float(daily_usage["kwh"].sum())}

    defs = backfill_definitions(assets=[berlin.daily_usage, usage_alert], location="berlin",
                                access=AccessPolicy(approvers=["ops"]))
    service = backfills_for_instance(defs, env.instance)
    created = service.create(RequestInput(assets=[BERLIN, "berlin/usage_alert"], from_day=DAY, to_day=DAY,
                                          allow_side_effects=["berlin/usage_alert"], approved_by="ops", reason="alert"))
    SENT.clear()
    drive(env, created.request.request_id, defs=defs)
    assert [(p["day"], p["kwh"]) for p in SENT] == [(DAY, 2 * berlin.KWH)]
