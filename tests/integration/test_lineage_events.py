"""The OpenLineage mapping of an attempt's stages, and the setting that chooses where events go (no Dagster run)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import jsonschema
import pytest
from openlineage.client.serde import Serde

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.storage import Warehouse
from backfill_assets.engine.wap.audit import CheckOutcome
from backfill_assets.engine.wap.gate import Gate
from backfill_assets.engine.wap.observer import AttemptEvent
from backfill_assets.integration.resources import BackfillResource
from backfill_assets.lineage import facets as F
from backfill_assets.lineage.config import (
    ENV_OPENLINEAGE,
    LineageTransport,
    lineage_target,
    parse_lineage_setting,
)
from backfill_assets.lineage.emitter import PAUSE_AFTER_FAILURE_SECONDS, OpenLineageObserver
from backfill_assets.lineage.events import LineageNaming, attempt_events, run_id_for
from tests.engine.catalog_helpers import identity, published
from tests.orders import GRAPH

ASSET, UPSTREAM = "order_facts", "raw_orders"
NAMING = LineageNaming.for_warehouse("backfill_assets", "backfill_production", "/data/warehouse")


class Recorder:
    def __init__(self) -> None:
        self.events: list[AttemptEvent] = []

    def observe(self, event: AttemptEvent) -> None:
        self.events.append(event)


def _attempt(tmp_path, checks: list[CheckOutcome]) -> tuple[list[AttemptEvent], str, str]:
    """A real gate on a real catalog: one attempt of order_facts reading a published raw_orders version."""
    catalog = Catalog(f"sqlite:///{tmp_path}/catalog.db")
    upstream = published(catalog, identity("run-up", asset=UPSTREAM))
    serving = published(catalog, identity("run-0"))
    recorder = Recorder()
    ident = identity("5f0c6c1e-9a43-4c4e-a8f4-1b2f1f9d7c11", request_id="req-20221001-abcdef12")
    gate = Gate(catalog, Warehouse(str(tmp_path / "w")), GRAPH[ASSET], ident, observers=[recorder])
    gate.begin()
    gate.inputs.append(catalog.get(upstream))
    catalog.mark_verifying(gate.version_id, path="/w/data.parquet", rows=10, sha256="0" * 64, stats={},
                           input_versions={f"{UPSTREAM}/2022-10-01": upstream})
    gate.conclude(checks)
    return recorder.events, upstream, serving


def _dicts(events: list[AttemptEvent]) -> list[dict]:
    return [json.loads(Serde.to_json(e)) for stage in events for e in attempt_events(stage, NAMING)]


def test_a_published_attempt_is_start_complete_then_the_publish_on_one_run(tmp_path):
    stages, upstream, serving = _attempt(tmp_path, [CheckOutcome("row_count", True, "rows match")])
    start, complete, publish = _dicts(stages)
    version_id = stages[0].version.version_id

    assert [e["eventType"] for e in (start, complete, publish)] == ["START", "COMPLETE", "OTHER"]
    assert {e["run"]["runId"] for e in (start, complete, publish)} == {run_id_for(version_id)}
    assert uuid.UUID(run_id_for(version_id)) and run_id_for(version_id) == run_id_for(version_id)
    assert complete["job"] == {"namespace": "backfill_assets", "name": ASSET, "facets": complete["job"]["facets"]}

    run = complete["run"]["facets"]
    ident = run[F.IDENTITY_FACET]
    assert ident["versionId"] == version_id and ident["attemptNo"] == 1 and ident["asset"] == ASSET
    assert ident["requestId"] == "req-20221001-abcdef12" and ident["lane"] == "backfill"
    assert ident["codeVersion"] == "git-abc123" and ident["paramsDigest"] and ident["partitionKey"] == "2022-10-01"
    assert ident["_producer"].startswith("urn:backfill_assets:") and ident["_schemaURL"].endswith(
        "#/$defs/BackfillIdentityRunFacet")
    times = run[F.TIMES_FACET]
    assert times["intervalStart"].startswith("2022-09-30T16:00:00") and times["intervalEnd"].startswith(
        "2022-10-01T16:00:00")
    assert times["startedAt"] and times["endedAt"] and times["publishedAt"]
    # Serialized without nulls: a time that has not happened yet is absent.
    assert "publishedAt" not in start["run"]["facets"][F.TIMES_FACET]
    assert run["nominalTime"]["nominalStartTime"] == times["intervalStart"]
    parent = run["parent"]
    assert parent["run"]["runId"] == "5f0c6c1e-9a43-4c4e-a8f4-1b2f1f9d7c11"
    assert parent["job"]["name"] == "backfill_production" and parent["root"]["run"]["runId"] == parent["run"]["runId"]

    [read] = complete["inputs"]
    assert (read["namespace"], read["name"]) == ("file", f"/data/warehouse/{UPSTREAM}")
    assert read["facets"]["version"]["datasetVersion"] == upstream
    [out] = complete["outputs"]
    assert (out["namespace"], out["name"]) == ("file", f"/data/warehouse/{ASSET}")
    assert out["facets"]["version"]["datasetVersion"] == version_id
    assert out["facets"][F.VERSION_FACET]["state"] == "published" and out["outputFacets"]["outputStatistics"][
        "rowCount"] == 10
    assert start["outputs"][0]["facets"][F.VERSION_FACET]["state"] == "writing"

    decision = publish["run"]["facets"][F.PUBLISH_FACET]
    assert decision["decision"] == "published" and decision["previousVersionId"] == serving
    assert publish["outputs"][0]["facets"]["lifecycleStateChange"]["lifecycleStateChange"] == "OVERWRITE"


def test_a_rejected_attempt_is_fail_with_its_failed_checks_then_the_rejection(tmp_path):
    checks = [CheckOutcome("row_count", False, "rows missing"), CheckOutcome("unique_key", True, "unique")]
    stages, _, serving = _attempt(tmp_path, checks)
    _, fail, rejection = _dicts(stages)

    assert (fail["eventType"], rejection["eventType"]) == ("FAIL", "OTHER")
    assert "row_count" in fail["run"]["facets"]["errorMessage"]["message"]
    assertions = fail["outputs"][0]["facets"]["dataQualityAssertions"]["assertions"]
    assert [(a["assertion"], a["success"]) for a in assertions] == [("row_count", False), ("unique_key", True)]
    assert fail["outputs"][0]["facets"][F.VERSION_FACET]["state"] == "rejected"
    decision = rejection["run"]["facets"][F.PUBLISH_FACET]
    assert decision["decision"] == "rejected" and decision["failedChecks"] == ["row_count"]
    assert decision["servingVersionId"] == serving


def test_every_facet_of_the_library_matches_the_schema_it_ships(tmp_path):
    stages, _, _ = _attempt(tmp_path, [CheckOutcome("row_count", False, "rows missing")])
    defs = F.facets_schema()["$defs"]
    seen = set()
    for event in _dicts(stages):
        found = [*event["run"]["facets"].values()]
        found += [f for d in (*event["inputs"], *event["outputs"]) for f in d["facets"].values()]
        for facet in found:
            name = facet["_schemaURL"].split("#/$defs/")[-1]
            if facet["_schemaURL"].startswith(F.SCHEMA_URL):
                jsonschema.validate(facet, defs[name]["allOf"][1])
                seen.add(name)
    assert seen == set(defs)


def test_datasets_on_object_storage_are_named_by_bucket_and_prefix():
    naming = LineageNaming.for_warehouse("ns", "job", "s3://lake/prod/warehouse")
    assert (naming.dataset_namespace, naming.dataset_name("orders")) == ("s3://lake", "prod/warehouse/orders")


@pytest.mark.parametrize(
    "setting, transport, location",
    [
        (None, LineageTransport.OFF, ""),
        ("off", LineageTransport.OFF, ""),
        ("console", LineageTransport.CONSOLE, ""),
        ("openlineage", LineageTransport.OPENLINEAGE_CONFIG, ""),
        ("file:/var/log/lineage.jsonl", LineageTransport.FILE, "/var/log/lineage.jsonl"),
        ("http://127.0.0.1:5000", LineageTransport.HTTP, "http://127.0.0.1:5000"),
    ],
)
def test_the_setting_names_a_transport(setting, transport, location):
    target = parse_lineage_setting(setting)
    assert (target.transport, target.location) == (transport, location)


def test_an_http_setting_with_a_path_uses_it_as_the_endpoint():
    target = parse_lineage_setting("https://lineage.example:8443/api/v1/lineage")
    assert target.transport_config()["url"] == "https://lineage.example:8443"
    assert target.transport_config()["endpoint"] == "api/v1/lineage"


@pytest.mark.parametrize("setting", ["kafka://broker", "file:", "http://", "on", "yes please"])
def test_a_setting_of_no_accepted_form_is_refused_naming_the_forms(setting):
    with pytest.raises(InvalidInput, match="console, file:<path>"):
        parse_lineage_setting(setting)


def test_the_console_target_writes_one_json_line_per_event_on_stdout(tmp_path, capsys):
    stages, _, _ = _attempt(tmp_path, [CheckOutcome("row_count", True, "rows match")])
    warned: list[str] = []
    observer = OpenLineageObserver(parse_lineage_setting("console"), NAMING, warned.append)
    for stage in stages:
        observer.observe(stage)
    lines = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [e["eventType"] for e in lines] == ["START", "COMPLETE", "OTHER"] and warned == []


def test_a_failed_send_warns_and_pauses_sending_to_that_target_for_a_while(tmp_path):
    stages, _, _ = _attempt(tmp_path, [CheckOutcome("row_count", True, "rows match")])
    began, published_ = stages
    warned: list[str] = []
    now = [1000.0]
    target = parse_lineage_setting(f"file:{tmp_path / 'no' / 'such' / 'dir' / 'x.jsonl'}")
    observer = OpenLineageObserver(target, NAMING, warned.append, clock=lambda: now[0])

    observer.observe(began)  # the file cannot be opened: warned, and the target paused
    observer.observe(published_)  # within the pause: not tried
    assert "not sent" in warned[0] and "skipped" in warned[1] and len(warned) == 2

    (tmp_path / "no" / "such" / "dir").mkdir(parents=True)
    now[0] += PAUSE_AFTER_FAILURE_SECONDS + 1
    observer.observe(published_)  # the pause is over and the file can be written: COMPLETE and the publish
    assert len(warned) == 2
    sent = [json.loads(line)["eventType"] for line in Path(target.location).read_text().splitlines()]
    assert sent == ["COMPLETE", "OTHER"]


def test_the_resource_setting_wins_over_the_environment_which_is_read_when_asked():
    environ = {ENV_OPENLINEAGE: "console"}
    assert lineage_target(None, None, environ).transport is LineageTransport.CONSOLE
    assert lineage_target("off", None, environ).transport is LineageTransport.OFF
    assert lineage_target(None, None, {}).enabled is False
    resource = BackfillResource(openlineage="http://127.0.0.1:5000", openlineage_namespace="team_a")
    assert (resource.lineage_target().transport, resource.lineage_target().namespace) == (
        LineageTransport.HTTP, "team_a")
