"""A run marked cancelled while its step computes publishes nothing, on a real instance.

``request cancel`` marks a run cancelled when its code server does not answer the termination request; the run
worker keeps going. Here the step is held after writing its version (``BACKFILL_HOLD``), the run is marked
cancelled exactly as ``defs/cancel.py`` does it, and the step is released: it must abandon its version.
"""

from __future__ import annotations

import threading
import time

import dagster as dg

from backfill_assets.engine.model.states import VersionState
from backfill_assets.engine.wap.faults import AFTER_VERIFYING, ENV_HOLD
from backfill_assets.examples.orders.domain import RAW_ORDERS
from tests.orders import GRAPH, run_partitions
from tests.specs import spec_of

DAY = "2022-09-02"
HELD_TIMEOUT = 300.0


def test_a_run_marked_cancelled_while_its_step_computes_abandons_its_version(env, tmp_path, monkeypatch):
    hold = tmp_path / "hold"
    hold.touch()
    monkeypatch.setenv(ENV_HOLD, f"{AFTER_VERIFYING}={hold}")
    problems: list[str] = []

    def cancel_the_held_run() -> None:
        try:
            deadline = time.monotonic() + HELD_TIMEOUT
            while time.monotonic() < deadline:
                held = [v for v in env.catalog.versions_of(RAW_ORDERS, DAY) if v.state == VersionState.VERIFYING]
                if held:
                    run = env.instance.get_run_by_id(held[0].dagster_run_id)
                    env.instance.report_run_canceled(run, message="marked cancelled by the test")
                    return
                time.sleep(0.05)
            problems.append(f"the step did not reach its hold within {HELD_TIMEOUT} s")
        except Exception as exc:  # noqa: BLE001 - reported to the test below
            problems.append(repr(exc))
        finally:
            hold.unlink(missing_ok=True)  # never leave the step held

    helper = threading.Thread(target=cancel_the_held_run, daemon=True)
    helper.start()
    [run] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS])
    helper.join(HELD_TIMEOUT)
    assert not problems, problems

    assert not run.success
    assert f"run {run.run_id} is CANCELED" in run.failure and "may not publish" in run.failure, run.failure
    [version] = env.catalog.versions_of(RAW_ORDERS, DAY)  # one attempt: the refusal is not retried
    assert version.dagster_run_id == run.run_id
    assert version.state == VersionState.ABANDONED and "CANCELED" in version.error, version
    assert env.catalog.current(RAW_ORDERS, DAY) is None
    assert env.instance.get_latest_materialization_event(dg.AssetKey(RAW_ORDERS)) is None


def test_a_run_of_a_cancelled_request_publishes_nothing(env):
    from backfill_assets.engine.model import tags as T
    from backfill_assets.engine.store.ledger import Ledger

    spec = spec_of(GRAPH, "2022-09-05", assets=RAW_ORDERS, first=DAY, last=DAY, requested_by="tester")
    ledger = Ledger(env.catalog)
    request_id = ledger.create("req-20220905-0badc0de", spec, "test-code-1", spec.excluded_cells(GRAPH)).request_id
    ledger.cancel(request_id)
    # A run of that request created after the cancel stopped looking for runs (a late sensor tick).
    [run] = run_partitions(env.instance, [DAY], assets=[RAW_ORDERS],
                           tags={T.REQUEST_ID: request_id, T.LANE: T.LANE_BACKFILL})

    assert not run.success and f"request {request_id} was cancelled" in run.failure, run.failure
    assert env.catalog.versions_of(RAW_ORDERS, DAY) == [] and env.catalog.current(RAW_ORDERS, DAY) is None
