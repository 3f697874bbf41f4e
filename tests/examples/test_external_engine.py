"""The external-engine example on a real Dagster instance: a gated asset's compute runs as a separate Python process
through Dagster Pipes (``dg.PipesSubprocessClient``). The identity reaches the process (its own log lines, in the
run's event log, name the version), it writes into the version's isolated location, its id is recorded with the
version (``trace`` finds the version from it), the gate publishes its output — and rejects a bad one, the previous
version still serving. A run writing several days (a range run, a backfill's batched run) publishes each."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import dagster as dg
import pandas as pd
import pytest
from click.testing import CliRunner

from backfill_assets import Backfills, backfills_for_instance
from backfill_assets.cli import cli
from backfill_assets.engine.model.errors import NotFound
from backfill_assets.engine.model.run_context import version_label
from backfill_assets.engine.store.db import dispose_all
from backfill_assets.engine.store.engine_refs import EngineRefs
from backfill_assets.examples.external_engine import MODULE
from backfill_assets.examples.external_engine.definitions import defs
from backfill_assets.integration.assets.chunks import CHUNK_JOB, chunk_run_config, chunk_tags
from tests.homes import fresh_home, shipped_storage

DST_DAY = "2024-03-31"  # 23 hours in Berlin: 3 meters x 23 readings
BAD_OUTPUT = {"ops": {"meter_readings": {"config": {"corrupt": True}}}}


@dataclass
class Ran:
    instance: dg.DagsterInstance
    backfills: Backfills
    good: dg.ExecuteInProcessResult
    bad: dg.ExecuteInProcessResult


def _materialize(instance: dg.DagsterInstance, **kwargs) -> dg.ExecuteInProcessResult:
    return dg.materialize([defs.resolve_assets_def("meter_readings")], instance=instance, raise_on_error=False,
                          **kwargs)


def _messages(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    return [e.user_message for e in instance.all_logs(run_id) if e.user_message]


@pytest.fixture(scope="module")
def ran(tmp_path_factory) -> Iterator[Ran]:
    home = tmp_path_factory.mktemp("external_engine")
    with pytest.MonkeyPatch.context() as monkeypatch:
        fresh_home(home, monkeypatch)
        with dg.instance_for_test(temp_dir=str(home), overrides=shipped_storage()) as instance:
            good = _materialize(instance, partition_key=DST_DAY)
            bad = _materialize(instance, partition_key=DST_DAY, run_config=BAD_OUTPUT)
            yield Ran(instance, backfills_for_instance(defs, instance), good, bad)
        dispose_all()


def _version_of(ran: Ran, run: dg.ExecuteInProcessResult):
    [version] = ran.backfills.catalog.versions_of_dagster_runs([run.run_id])
    return version


def test_the_identity_reaches_the_process_and_its_output_is_published(ran):
    assert ran.good.success
    version = _version_of(ran, ran.good)
    assert (version.state, version.rows) == ("PUBLISHED", 3 * 23)
    # The process's own log line, through Pipes, names the version and carries the identity.
    [line] = [m for m in _messages(ran.instance, ran.good.run_id) if m.startswith("external job computing")]
    identity = json.loads(line.split("identity=", 1)[1])
    assert line.startswith(f"external job computing {version.version_id} ")
    assert identity["version_id"] == version.version_id
    assert (identity["asset"], identity["partition_key"], identity["attempt_no"]) == ("meter_readings", DST_DAY, "1")
    assert identity["dagster_run_id"] == ran.good.run_id and identity["code_version"] == version.code_version
    # It wrote into the version's isolated location; the gate wrote the published file beside it.
    engine_output = Path(version.path).parent / "engine" / "part-00000.parquet"
    assert len(pd.read_parquet(engine_output)) == 3 * 23
    assert ran.backfills.serving("meter_readings", DST_DAY).version_id == version.version_id


def test_the_engine_id_the_process_reported_finds_its_version(ran):
    version = _version_of(ran, ran.good)
    [ref] = EngineRefs(ran.backfills.catalog).of_versions([version.version_id])[version.version_id]
    assert ref.engine == "subprocess" and ref.engine_id.split(":")[1].isdigit()  # host:pid of the process
    [traced] = ran.backfills.trace(ref.engine_id)
    assert (traced.version.version_id, traced.matched_by, traced.engine_refs) == (version.version_id, "engine_id",
                                                                                 (ref,))


def test_a_bad_output_of_the_process_is_rejected_and_the_previous_version_keeps_serving(ran):
    assert not ran.bad.success
    rejected = _version_of(ran, ran.bad)
    assert rejected.state == "REJECTED"
    failed = {c["name"] for c in rejected.checks if not c["passed"]}
    assert failed == {"primary_key_unique", "row_count", "no_negative_usage"}
    assert ran.backfills.serving("meter_readings", DST_DAY).version_id == _version_of(ran, ran.good).version_id
    # The process ran and reported its id: the rejected version is traceable from its engine too.
    assert EngineRefs(ran.backfills.catalog).of_versions([rejected.version_id])[rejected.version_id]


def test_a_run_writing_several_days_publishes_each_from_its_own_process(ran):
    result = _materialize(ran.instance, tags={"dagster/asset_partition_range_start": "2024-04-01",
                                              "dagster/asset_partition_range_end": "2024-04-02"})
    assert result.success
    written = ran.backfills.catalog.versions_of_dagster_runs([result.run_id])
    assert sorted((v.partition_key, v.state, v.rows) for v in written) == [
        ("2024-04-01", "PUBLISHED", 72), ("2024-04-02", "PUBLISHED", 72)]
    refs = EngineRefs(ran.backfills.catalog).of_versions([v.version_id for v in written])
    assert len({r[0].engine_id for r in refs.values()}) == 2  # one process per day


def test_a_backfill_s_batched_run_hands_each_day_to_its_own_process_and_downstream_reads_the_published_output(ran):
    days = {"meter_readings": ["2024-04-03", "2024-04-04"], "daily_usage": ["2024-04-03", "2024-04-04"]}
    result = defs.resolve_job_def(CHUNK_JOB).execute_in_process(
        instance=ran.instance, run_config=chunk_run_config(days), tags=chunk_tags(days), raise_on_error=False)
    assert result.success
    for day in days["meter_readings"]:
        readings, usage = (ran.backfills.serving(a, day) for a in ("meter_readings", "daily_usage"))
        assert (readings.state, readings.rows, usage.state, usage.rows) == ("PUBLISHED", 72, "PUBLISHED", 3)
        assert usage.input_versions == {f"meter_readings/{day}": readings.version_id}
    lines = [m for m in _messages(ran.instance, result.run_id) if m.startswith("external job computing")]
    assert len(lines) == 2


def test_trace_on_the_command_line_finds_the_version_and_refuses_an_unknown_id(ran):
    version = _version_of(ran, ran.good)
    [ref] = EngineRefs(ran.backfills.catalog).of_versions([version.version_id])[version.version_id]
    result = CliRunner().invoke(cli, ["-m", MODULE, "trace", ref.engine_id, "--json"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    [row] = json.loads(result.output)
    assert (row["version_id"], row["state"], row["matched_by"]) == (version.version_id, "PUBLISHED", "engine_id")
    assert [e["engine_id"] for e in row["engine_refs"]] == [ref.engine_id]
    # The run's id (a pod's backfill-assets.io/dagster-run-id label) lists what that run wrote.
    by_run = CliRunner().invoke(cli, ["-m", MODULE, "trace", ran.bad.run_id], catch_exceptions=False)
    assert by_run.exit_code == 0 and f"{_version_of(ran, ran.bad).version_id}  REJECTED" in by_run.output
    # A pod's backfill-assets.io/version-id label (shortened here: it ends in a digest) names the version too.
    [by_label] = ran.backfills.trace(version_label(version.version_id))
    assert (by_label.version.version_id, by_label.matched_by) == (version.version_id, "version_label")
    unknown = CliRunner().invoke(cli, ["-m", MODULE, "trace", "no-such-pod-7f9c"])
    assert unknown.exit_code == 2
    assert "no version has the engine id, label, version id or run id 'no-such-pod-7f9c'" in unknown.output
    with pytest.raises(NotFound):
        ran.backfills.trace("no-such-pod-7f9c")


def test_versions_shows_what_each_version_ran_as(ran):
    version = _version_of(ran, ran.good)
    [ref] = EngineRefs(ran.backfills.catalog).of_versions([version.version_id])[version.version_id]
    asset, day = version.asset, version.partition_key
    shown = CliRunner().invoke(cli, ["-m", MODULE, "versions", asset, day, "--json"], catch_exceptions=False)
    assert shown.exit_code == 0, shown.output
    [row] = [r for r in json.loads(shown.output) if r["version_id"] == version.version_id]
    assert [(e["engine"], e["engine_id"]) for e in row["engine_refs"]] == [(ref.engine, ref.engine_id)]
    text = CliRunner().invoke(cli, ["-m", MODULE, "versions", asset, day], catch_exceptions=False)
    assert f"ran as {ref.engine} {ref.engine_id} (reported {ref.at})" in text.output
