"""OpenLineage events from real Dagster runs of the orders example, sent to a receiver on loopback.

Lineage is turned on the way a deployment does it, by the ``BACKFILL_OPENLINEAGE`` setting the step reads when it
runs; a receiver that is down must leave the publish exactly as it would be without lineage.
"""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Iterator

import pytest

from backfill_assets.examples.orders.domain import ORDER_FACTS, RAW_ORDERS
from backfill_assets.lineage import facets as F
from backfill_assets.lineage.config import ENV_OPENLINEAGE
from backfill_assets.lineage.events import run_id_for
from tests.orders import run_partitions

DAY = "2022-09-01"
PIPELINE = [RAW_ORDERS, ORDER_FACTS]


class Receiver:
    """An OpenLineage HTTP endpoint: every POSTed event body, in arrival order."""

    def __init__(self) -> None:
        self.events: list[dict] = []
        self.paths: set[str] = set()
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 — http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                received.events.append(json.loads(body))
                received.paths.add(self.path)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def of(self, asset: str) -> list[dict]:
        return [e for e in self.events if e["job"]["name"] == asset]


@pytest.fixture
def receiver(env, monkeypatch) -> Iterator[Receiver]:
    made = Receiver()
    thread = threading.Thread(target=made.server.serve_forever, daemon=True)
    thread.start()
    monkeypatch.setenv(ENV_OPENLINEAGE, made.url)
    yield made
    made.server.shutdown()
    made.server.server_close()


def _defect(asset: str, kind: str) -> dict:
    return {"ops": {asset: {"config": {"defect": kind}}}}


def test_a_published_day_sends_start_then_complete_with_its_identity_reads_and_version(env, receiver):
    [run] = run_partitions(env.instance, [DAY], assets=PIPELINE)
    assert run.success, run.failure
    current = env.catalog.current(ORDER_FACTS, DAY)
    upstream = env.catalog.current(RAW_ORDERS, DAY)

    events = receiver.of(ORDER_FACTS)
    assert [e["eventType"] for e in events] == ["START", "COMPLETE", "OTHER"]
    assert {e["run"]["runId"] for e in events} == {run_id_for(current.version_id)}
    assert receiver.paths == {"/api/v1/lineage"}
    complete = events[1]
    ident = complete["run"]["facets"][F.IDENTITY_FACET]
    assert (ident["versionId"], ident["dagsterRunId"], ident["logicalRunId"]) == (
        current.version_id, run.run_id, run.run_id)
    assert (ident["attemptNo"], ident["codeVersion"], ident["lane"]) == (1, "test-code-1", "production")
    assert ident["paramsDigest"] == current.params_digest
    times = complete["run"]["facets"][F.TIMES_FACET]
    assert times["startedAt"] == current.started_at and times["endedAt"] == current.ended_at
    assert times["requestedAt"] == current.requested_at and times["intervalStart"] == current.interval_start
    assert complete["run"]["facets"]["parent"]["run"]["runId"] == run.run_id
    assert complete["run"]["facets"]["parent"]["job"]["name"] == "production_daily"

    [read] = complete["inputs"]
    assert read["name"].endswith(f"/{RAW_ORDERS}") and read["facets"]["version"]["datasetVersion"] == (
        upstream.version_id)
    [out] = complete["outputs"]
    assert out["facets"]["version"]["datasetVersion"] == current.version_id
    assert out["facets"][F.VERSION_FACET]["state"] == "published"
    assert out["outputFacets"]["outputStatistics"]["rowCount"] == current.rows
    # The published Iceberg table the day now reads from, named as OpenLineage names a table.
    [table] = out["facets"]["symlinks"]["identifiers"]
    assert table["type"] == "TABLE" and table["name"] == f"published.{ORDER_FACTS}"
    assert table["namespace"].startswith("sqlite:///") and table["namespace"].endswith("iceberg_catalog.db")
    publish = events[2]["run"]["facets"][F.PUBLISH_FACET]
    assert publish["decision"] == "published" and events[2]["run"]["facets"][F.TIMES_FACET]["publishedAt"] == (
        current.published_at)
    # The root asset read nothing; its events came first, in the step order.
    assert [e["eventType"] for e in receiver.of(RAW_ORDERS)] == ["START", "COMPLETE", "OTHER"]
    assert receiver.of(RAW_ORDERS)[1]["inputs"] == []


def test_a_rejected_day_sends_fail_with_the_failed_checks(env, receiver):
    [good] = run_partitions(env.instance, [DAY], assets=PIPELINE)
    serving = env.catalog.current(ORDER_FACTS, DAY)
    receiver.events.clear()

    [bad] = run_partitions(env.instance, [DAY], assets=PIPELINE,
                           run_config_for={DAY: _defect(ORDER_FACTS, "drop_rows")})
    assert good.success and not bad.success
    events = receiver.of(ORDER_FACTS)
    assert [e["eventType"] for e in events] == ["START", "FAIL", "OTHER"]
    fail = events[1]
    rejected_id = f"{ORDER_FACTS}/{DAY}/{bad.run_id}/1"
    assert fail["run"]["runId"] == run_id_for(rejected_id)
    assert "row_count" in fail["run"]["facets"]["errorMessage"]["message"]
    assertions = {a["assertion"]: a["success"] for a in
                  fail["outputs"][0]["facets"]["dataQualityAssertions"]["assertions"]}
    assert assertions["row_count"] is False
    assert fail["outputs"][0]["facets"][F.VERSION_FACET]["state"] == "rejected"
    decision = events[2]["run"]["facets"][F.PUBLISH_FACET]
    assert decision["decision"] == "rejected" and "row_count" in decision["failedChecks"]
    assert decision["servingVersionId"] == serving.version_id


def test_a_range_run_sends_one_run_per_day(env, receiver):
    [run] = run_partitions(env.instance, [(DAY, "2022-09-02")], assets=[RAW_ORDERS])
    assert run.success, run.failure
    by_run: dict[str, list[str]] = {}
    for event in receiver.of(RAW_ORDERS):
        by_run.setdefault(event["run"]["facets"][F.IDENTITY_FACET]["partitionKey"], []).append(event["eventType"])
    assert by_run == {DAY: ["START", "COMPLETE", "OTHER"], "2022-09-02": ["START", "COMPLETE", "OTHER"]}


def test_lineage_is_off_unless_the_setting_turns_it_on(env, receiver, monkeypatch):
    monkeypatch.delenv(ENV_OPENLINEAGE)
    [run] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS])
    assert run.success and receiver.events == []


def test_the_file_transport_writes_one_parseable_event_a_line(env, tmp_path, monkeypatch):
    path = tmp_path / "lineage" / "events.jsonl"
    path.parent.mkdir()
    monkeypatch.setenv(ENV_OPENLINEAGE, f"file:{path}")
    [run] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS])
    assert run.success, run.failure

    events = [json.loads(line) for line in path.read_text().splitlines()]
    assert [e["eventType"] for e in events] == ["START", "COMPLETE", "OTHER"]
    assert events[1]["run"]["facets"][F.IDENTITY_FACET]["versionId"] == (
        env.catalog.current(RAW_ORDERS, DAY).version_id)


def test_a_receiver_that_is_down_leaves_the_day_published_and_warns(env, monkeypatch):
    with socket.socket() as probe:  # a port nothing listens on: connections are refused
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    # An endpoint of its own: a later receiver on the same port is not a target this process paused.
    monkeypatch.setenv(ENV_OPENLINEAGE, f"http://127.0.0.1:{port}/down/api/v1/lineage")
    [run] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS])

    assert run.success, run.failure
    current = env.catalog.current(RAW_ORDERS, DAY)
    assert current.version_id == f"{RAW_ORDERS}/{DAY}/{run.run_id}/1" and current.state == "PUBLISHED"
    warnings = [e.user_message for e in env.instance.all_logs(run.run_id) if "OpenLineage" in (e.user_message or "")]
    # START could not be sent; the conclusion is not even tried (the target is paused after a failure).
    assert len(warnings) == 2 and "START event" in warnings[0] and "not sent" in warnings[0]
    assert "published" in warnings[1] and "skipped" in warnings[1]
    assert all(current.version_id in w and "goes on" in w for w in warnings)


def test_a_setting_of_no_accepted_form_fails_the_step_before_it_writes(env, monkeypatch):
    monkeypatch.setenv(ENV_OPENLINEAGE, "kafka://broker:9092")
    [run] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS])
    assert not run.success and "file:<path>" in run.failure and "kafka://broker:9092" in run.failure
    assert env.catalog.versions_of(RAW_ORDERS, DAY) == []
