"""Downstream follows published versions through the real propagation and driver sensors in dagster-daemon."""

from __future__ import annotations

import time

from backfill_assets.engine.model import request_model as M
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS, RAW_ORDERS

DAY = "2022-09-01"  # the first partition: its snapshot has no previous day to wait for


def test_confirmed_cascade_runs_downstream_of_the_published_version(e2e):
    e2e.prepare([DAY], [RAW_ORDERS, ORDER_FACTS])
    rid = e2e.create("--assets", ORDER_FACTS, "--from", DAY, "--to", DAY, "--reprocess", "completed",
                     "--downstream", "cascade", "--confirm-cascade")["request_id"]
    # The upstream publishes; the cascaded cells appear and wait for confirmation.
    deadline = time.monotonic() + 90
    while True:
        cells = {(c["asset"], c["origin"]): c["decision"] for c in e2e.show(rid)["cells"]}
        # The propagation sensor may add the cells a tick before the driver settles the upstream cell.
        if (DAILY_REVENUE, "cascade") in cells and cells[(ORDER_FACTS, "planned")] == M.PUBLISHED:
            break
        assert time.monotonic() < deadline, cells
        time.sleep(1)
    assert cells[(ORDER_FACTS, "planned")] == M.PUBLISHED
    assert cells[(DAILY_REVENUE, "cascade")] == M.PENDING and cells[(CUSTOMER_SNAPSHOT, "cascade")] == M.PENDING
    e2e.wait_driver_ticks(2)  # the driver has looked twice since: nothing downstream launches before confirmation
    assert {asset for asset, _ in e2e.run_cells(rid)} == {ORDER_FACTS}
    assert "request confirm" in (e2e.show(rid)["message"] or "")

    e2e.cli_json("request", "confirm", rid)
    out = e2e.wait(rid)
    assert out["complete"] is True
    assert e2e.run_cells(rid) == {(ORDER_FACTS, DAY), (DAILY_REVENUE, DAY), (CUSTOMER_SNAPSHOT, DAY)}
    order_facts = e2e.catalog.current(ORDER_FACTS, DAY)
    revenue = e2e.catalog.current(DAILY_REVENUE, DAY)
    assert order_facts.request_id == rid and revenue.request_id == rid
    assert revenue.input_versions == {f"{ORDER_FACTS}/{DAY}": order_facts.version_id}
