"""A backfill launched through a dagster-webserver's GraphQL API becomes request dg-<id> in the ledger."""

from __future__ import annotations

import time

import dagster as dg
import pytest

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.outbox import deliveries
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS, REVENUE_ALERT
from tests.orders import DAILY_PARTITIONS as CALENDAR_PARTITIONS

from .conftest import HELD, HOLD_TAG, launch_held_run, poll, release_held_run, report_outputs
from .services import LAUNCH_BACKFILL as LAUNCH
from .services import Webserver, serving_webserver

pytestmark = pytest.mark.daemon

DAYS = ["2022-09-29", "2022-09-30"]
ADOPTION_TIMEOUT = 300.0
# A report run is requested by the adoption sensor's next tick (≥ 5 s), queued, started (a fresh process) and run.
REPORT_TIMEOUT = 180.0

CANCEL = """
mutation Cancel($id: String!) { cancelPartitionBackfill(backfillId: $id) { __typename } }
"""


def launch_adopted(
    e2e, webserver: Webserver, assets: list[str], days: list[str], tags: dict[str, str]
) -> tuple[str, str]:
    """Launch a backfill as the UI's dialog does (GraphQL launchPartitionBackfill with the dialog's tags) and
    wait until the adoption sensor has it in the ledger; returns (backfill id, request id)."""
    launched = webserver.graphql(
        LAUNCH,
        {
            "params": {
                "assetSelection": [{"path": [a]} for a in assets],
                "partitionNames": days,
                "tags": [{"key": k, "value": v} for k, v in tags.items()],
                "title": f"ui backfill {tags}"[:100],  # Dagster refuses a longer title
            }
        },
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    request_id = f"dg-{launched['backfillId']}"
    poll(
        lambda: request_id in {r["request_id"] for r in e2e.cli_json("request", "list")},
        ADOPTION_TIMEOUT,
        f"{request_id} adopted",
    )
    return launched["backfillId"], request_id


def assert_reconciles_exactly(e2e, request_id: str, published: int, skipped: int) -> None:
    report = e2e.cli_json("reconcile", request_id)
    totals = report["totals"]
    assert report["complete"] is True, report
    assert (totals["published"], totals["skipped"], totals["duplicate_publishes"], totals["gaps"]) == (
        published, skipped, 0, 0
    ), totals


# A cancelled backfill's statuses. Dagster's backfill daemon may complete the backfill in the iteration that sees
# its runs cancelled, over the CANCELING status (its completion does not check for a pending cancel):
# COMPLETED_FAILED then, which launches nothing more either. `request cancel` reports the status once its runs
# are stopped.
STOPPED = ("CANCELING", "CANCELED", "COMPLETED_FAILED")


@pytest.fixture(scope="module")
def webserver(e2e):
    """One dagster-webserver for the module's tests (each launches its own backfill through it)."""
    yield from serving_webserver(e2e.home)


def test_backfill_launched_from_the_dagster_ui_is_adopted_as_a_request_with_its_cells(e2e, webserver):
    launched = webserver.graphql(
        LAUNCH,
        {
            "params": {
                "assetSelection": [{"path": [DAILY_REVENUE]}],
                "partitionNames": DAYS,
                # Its runs stay queued (the test's run queue never dequeues a held run): the cancel below must
                # find the backfill in progress, which a fast machine otherwise finishes first.
                "tags": [{"key": HOLD_TAG, "value": HELD}],
                "title": "ui backfill",
            }
        },
    )["launchPartitionBackfill"]
    assert launched["__typename"] == "LaunchBackfillSuccess", launched
    request_id = f"dg-{launched['backfillId']}"
    try:
        deadline = time.monotonic() + ADOPTION_TIMEOUT
        listed: dict = {}
        while time.monotonic() < deadline and not listed:
            listed = {r["request_id"]: r for r in e2e.cli_json("request", "list")}.get(request_id) or {}
            if not listed:
                time.sleep(1)
        assert listed, f"{request_id} was not adopted within {ADOPTION_TIMEOUT} s"
        assert listed["source"] == "dagster"
        assert listed["assets"] == [DAILY_REVENUE] and listed["partitions"] == DAYS

        shown = e2e.show(request_id)
        assert shown["source"] == "dagster"
        assert sorted((c["asset"], c["partition_key"]) for c in shown["cells"]) == [(DAILY_REVENUE, d) for d in DAYS]
        assert shown["counts"]["planned"] == len(DAYS)

        # `request cancel` on the adopted request cancels the Dagster backfill itself, not just the ledger row.
        cancelled = e2e.cli_json("request", "cancel", request_id)
        assert cancelled["dagster_backfill_status"] in STOPPED, cancelled
        assert e2e.instance.get_backfill(launched["backfillId"]).status.value in STOPPED
        assert e2e.show(request_id)["status"] == "cancelled"
        # terminate_request_runs returned only once none of the backfill's runs was queued or running.
        in_flight = [r for r in e2e.instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": launched["backfillId"]}))
                     if not r.is_finished]
        assert in_flight == []
    finally:
        if e2e.instance.get_backfill(launched["backfillId"]).status.value not in STOPPED:
            webserver.graphql(CANCEL, {"id": launched["backfillId"]})


# Per policy: a published, a rejected and a missing day of order_facts (the three launched at once).
POLICY_DAYS = {
    "failed": ["2022-09-28", "2022-09-29", "2022-09-30"],
    "none": ["2022-10-11", "2022-10-12", "2022-10-13"],
    "completed": ["2022-10-14", "2022-10-15", "2022-10-16"],
}
# What each policy does with the published, rejected and missing day: None = recomputed and published, else the
# reason the cell was left alone.
LEFT_ALONE = {
    "failed": ("latest attempt PUBLISHED", None, None),
    "none": ("has a version (PUBLISHED)", "has a version (REJECTED)", None),
    "completed": (None, None, None),
}
DROP_ROWS = {"ops": {ORDER_FACTS: {"config": {"defect": "drop_rows"}}}}


def test_a_ui_backfill_keeps_its_reprocess_policy(e2e, webserver):
    all_days = [d for days in POLICY_DAYS.values() for d in days]
    e2e.prepare(all_days, [RAW_ORDERS])
    e2e.prepare([days[0] for days in POLICY_DAYS.values()], [ORDER_FACTS])
    rejected_days = [days[1] for days in POLICY_DAYS.values()]
    e2e.prepare(rejected_days, [ORDER_FACTS], run_config_for={d: DROP_ROWS for d in rejected_days},
                expect_success=False)
    versions_before = {d: [v.version_id for v in e2e.catalog.versions_of(ORDER_FACTS, d)] for d in all_days}

    # What the dialog sends when the user adds the tag backfill/reprocess=<policy>.
    requests = {
        policy: launch_adopted(e2e, webserver, [ORDER_FACTS], days, {T.REPROCESS: policy})[1]
        for policy, days in POLICY_DAYS.items()
    }
    for policy, request_id in requests.items():
        e2e.wait(request_id)
        shown = e2e.show(request_id)
        assert shown["reprocess"] == policy
        cells = {c["partition_key"]: c for c in shown["cells"]}
        for day, left_alone in zip(POLICY_DAYS[policy], LEFT_ALONE[policy], strict=True):
            cell = cells[day]
            versions = [v.version_id for v in e2e.catalog.versions_of(ORDER_FACTS, day)]
            if left_alone is None:
                assert cell["decision"] == "published", (policy, cell)
                assert len(versions) == len(versions_before[day]) + 1, (policy, day)
                continue
            reason = f"{left_alone} ({T.REPROCESS}={policy})"
            assert (cell["decision"], cell["reason"]) == ("skipped", reason), (policy, cell)
            # Left alone: the step wrote nothing and said why in the run's log.
            assert versions == versions_before[day], (policy, day)
            logs = " ".join(r.user_message for r in e2e.instance.all_logs(cell["dagster_run_id"]))
            assert f"{ORDER_FACTS} {day}: not recomputed — {reason}" in logs
        # Dagster's own status agrees: a day serving a version is Materialized, the day still rejected is not.
        statuses = e2e.instance.get_status_by_partition(
            dg.AssetKey(ORDER_FACTS), POLICY_DAYS[policy], CALENDAR_PARTITIONS
        )
        for day, left_alone in zip(POLICY_DAYS[policy], LEFT_ALONE[policy], strict=True):
            still_rejected = left_alone is not None and "REJECTED" in left_alone
            assert (statuses[day] == dg.AssetPartitionStatus.MATERIALIZED) != still_rejected, (policy, statuses)
        skipped = sum(r is not None for r in LEFT_ALONE[policy])
        assert_reconciles_exactly(e2e, request_id, published=3 - skipped, skipped=skipped)

    # In the UI: a report run when it was adopted (the effective policy) and one when it closed.
    request_id, (published, *_) = requests["failed"], POLICY_DAYS["failed"]
    adopted, closed = report_outputs(e2e, request_id, REPORT_TIMEOUT, count=2)
    # The adoption's report is rendered when its run executes, which may be after the request's three runs have
    # finished: what it must show is the effective policy, not an unfinished request.
    assert "reprocess **failed**" in adopted["report"]
    assert closed["complete"] is True and (closed["published"], closed["skipped"]) == (2, 1)
    assert f"| {published} | {ORDER_FACTS} | skipped |" in closed["report"]


PACED_DAYS = ["2022-10-04", "2022-10-05", "2022-10-06", "2022-10-07"]


def test_a_ui_backfill_runs_at_most_max_active_runs_newest_first(e2e, webserver):
    e2e.prepare(PACED_DAYS, [RAW_ORDERS])
    backfill_id, request_id = launch_adopted(
        e2e, webserver, [ORDER_FACTS], PACED_DAYS, {T.MAX_ACTIVE: "1", T.ORDER: "backward"}
    )
    e2e.wait(request_id)

    shown = e2e.show(request_id)
    assert (shown["max_active"], shown["order"]) == (1, "backward")
    records = sorted(
        e2e.instance.get_run_records(dg.RunsFilter(tags={T.DAGSTER_BACKFILL: backfill_id})),
        key=lambda r: r.start_time,
    )
    assert [r.dagster_run.tags[T.DAGSTER_PARTITION] for r in records] == list(reversed(PACED_DAYS))
    for earlier, later in zip(records, records[1:], strict=False):
        assert later.start_time >= earlier.end_time, "two runs of a max_active=1 backfill overlapped"
    for record in records:
        tags = record.dagster_run.tags
        assert (tags[T.SLOT], tags[T.LANE], tags[T.QUEUE_HOLD]) == (f"{request_id}/0", "backfill", "released")
        assert tags[T.TEAM] == "team:analytics"  # order_facts' owner: the run queue's per-team limit applies
        # Every run says its request and the code version it computed under, as the driver's runs do.
        assert (tags[T.REQUEST_ID], tags[T.CODE_VERSION]) == (request_id, shown["code_version"]), tags
    assert_reconciles_exactly(e2e, request_id, published=len(PACED_DAYS), skipped=0)


SIDE_EFFECT_DAY = "2022-10-08"


def test_a_ui_backfill_leaves_an_unapproved_side_effect_alone(e2e, webserver):
    e2e.prepare([SIDE_EFFECT_DAY], [RAW_ORDERS, ORDER_FACTS, DAILY_REVENUE])
    # Its run is held in the queue until the note is read: a request's message becomes its close reason when it
    # closes, and one skipped cell closes it in a second.
    backfill_id, request_id = launch_adopted(
        e2e, webserver, [REVENUE_ALERT], [SIDE_EFFECT_DAY], {T.MAX_ACTIVE: "6", HOLD_TAG: HELD}
    )
    # As `request create` says it: the instance's queue (4 runs at once here) lets fewer runs execute.
    assert e2e.show(request_id)["message"] == (
        "max_active 6, but at most 4 run(s) of this request execute at once: bound by max_concurrent_runs 4, shared "
        "by every run of the instance; to run more at once, raise it under concurrency.runs.max_concurrent_runs in "
        "the instance's dagster.yaml"
    )
    [held] = poll(lambda: e2e.instance.get_runs(dg.RunsFilter(tags={"dagster/backfill": backfill_id})), 60,
                  f"the run of backfill {backfill_id}")
    release_held_run(e2e, held.run_id)
    e2e.wait(request_id)

    [cell] = e2e.show(request_id)["cells"]
    assert cell["decision"] == "skipped"
    assert cell["reason"].startswith("side effect not authorized"), cell
    logs = " ".join(r.user_message for r in e2e.instance.all_logs(cell["dagster_run_id"]))
    assert f"{REVENUE_ALERT} {SIDE_EFFECT_DAY}: not run — side effect not authorized" in logs
    assert deliveries(e2e.catalog, SIDE_EFFECT_DAY, asset=REVENUE_ALERT) == []
    assert_reconciles_exactly(e2e, request_id, published=0, skipped=1)


IN_FLIGHT_DAY = "2022-10-09"


def test_a_ui_backfill_never_computes_a_cell_another_run_has_in_flight_and_follows_its_outcome(e2e, webserver):
    """Done means published: the backfill's step leaves the day alone (another run is writing it), and the adopted
    request stays open following that run until it has published the day."""
    e2e.prepare([IN_FLIGHT_DAY], [RAW_ORDERS])
    held = launch_held_run(e2e, IN_FLIGHT_DAY)  # a queued run that will write the day (the queue never starts it)
    try:
        backfill_id, request_id = launch_adopted(
            e2e, webserver, [ORDER_FACTS], [IN_FLIGHT_DAY], {T.REPROCESS: "completed"}
        )
        following = poll(lambda: [c for c in e2e.show(request_id)["cells"] if c["decision"] == "following"],
                         ADOPTION_TIMEOUT, lambda: f"{request_id} following: {e2e.show(request_id)}")
        [cell] = following
        assert (cell["dagster_run_id"], cell["reason"]) == (
            held.run_id, f"in flight (run {held.run_id[:8]}) ({T.REPROCESS}=completed)"
        )
        # Dagster closes its backfill on a later pass of its backfill loop than the one the cell was decided on.
        poll(lambda: e2e.instance.get_backfill(backfill_id).status.value.startswith("COMPLETED"), ADOPTION_TIMEOUT,
             lambda: f"backfill {backfill_id}: {e2e.instance.get_backfill(backfill_id).status}")
        assert e2e.show(request_id)["status"] == "open"
        assert e2e.catalog.versions_of(ORDER_FACTS, IN_FLIGHT_DAY) == []

        release_held_run(e2e, held.run_id)
        e2e.wait(request_id)
        [cell] = e2e.show(request_id)["cells"]
        assert (cell["decision"], cell["dagster_run_id"]) == ("published", held.run_id), cell
        assert e2e.catalog.current(ORDER_FACTS, IN_FLIGHT_DAY).dagster_run_id == held.run_id
    finally:
        run = e2e.instance.get_run_by_id(held.run_id)
        if not run.is_finished and run.status == dg.DagsterRunStatus.QUEUED:
            e2e.instance.report_run_canceled(run)


CASCADE_DAY = "2022-09-24"


def test_a_ui_backfill_cascades_downstream_once_confirmed_as_a_cli_request_does(e2e, webserver):
    """`backfill/downstream=confirm` on a UI launch: the daily_revenue it selects publishes, the propagation sensor
    adds the authorized side effect downstream, which waits for `request confirm`; then the driver delivers it
    once, under the adopted request."""
    e2e.prepare([CASCADE_DAY], [RAW_ORDERS, ORDER_FACTS])
    tags = {T.DOWNSTREAM: "confirm", T.ALLOW_SIDE_EFFECTS: REVENUE_ALERT, T.APPROVED_BY: "e2e-approver"}
    _, request_id = launch_adopted(e2e, webserver, [DAILY_REVENUE], [CASCADE_DAY], tags)

    def cascaded() -> dict | None:
        shown = e2e.show(request_id)
        cells = {(c["asset"], c["origin"]): c["decision"] for c in shown["cells"]}
        waiting = (REVENUE_ALERT, "cascade") in cells and "request confirm" in (shown["message"] or "")
        return shown if waiting and cells[(DAILY_REVENUE, "planned")] == "published" else None

    shown = poll(cascaded, ADOPTION_TIMEOUT, lambda: f"the cascaded cell of {request_id}: {e2e.show(request_id)}")
    assert shown["status"] == "open" and shown["downstream"] == "cascade"
    assert deliveries(e2e.catalog, CASCADE_DAY, asset=REVENUE_ALERT) == []

    e2e.cli_json("request", "confirm", request_id)
    assert e2e.wait(request_id)["complete"] is True
    cells = {(c["asset"], c["origin"]): c["decision"] for c in e2e.show(request_id)["cells"]}
    assert cells == {(DAILY_REVENUE, "planned"): "published", (REVENUE_ALERT, "cascade"): "published"}
    assert len(deliveries(e2e.catalog, CASCADE_DAY, asset=REVENUE_ALERT)) == 1
    # The driver's run is the request's: tagged with it, not with Dagster's backfill.
    assert e2e.run_cells(request_id) >= {(REVENUE_ALERT, CASCADE_DAY)}
    assert_reconciles_exactly(e2e, request_id, published=2, skipped=0)
