"""A request's spec round-trips through the ledger unchanged: every field a user set (and what validation
derived from them: serial, the auto K and how it was chosen) reads back as it was frozen."""

from __future__ import annotations

import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.intervals import utc_now
from backfill_assets.engine.model.request_input import RequestInput, build_spec
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import CUSTOMER_SNAPSHOT, DAILY_REVENUE, ORDER_FACTS, REVENUE_ALERT
from tests.orders import GRAPH

NEWEST = "2022-10-31"


@pytest.mark.parametrize("asked", [
    RequestInput(assets=[ORDER_FACTS, CUSTOMER_SNAPSHOT], from_day="2022-10-01", to_day="2022-10-05",
                 reprocess="completed", max_active=1, downstream="cascade", confirm_cascade=True,
                 conf={"order_facts": {"usd_to_cny": 7.3}, "handoff_window_seconds": 60}, reason="FX fix\nsecond line",
                 requested_by="ana", wait_for_overlap=True),
    RequestInput(assets=[DAILY_REVENUE, REVENUE_ALERT], from_day="2022-10-01", to_day="2022-10-20",
                 reprocess="failed", only_failed=True, max_active=4, order="backward", partitions_per_run=5,
                 allow_side_effects=[REVENUE_ALERT], approved_by="lead", downstream="handoff"),
], ids=["serial-cascade-conf", "backward-side-effects-explicit-k"])
def test_a_spec_reads_back_from_the_ledger_as_it_was_frozen(catalog, asked):
    spec = build_spec(GRAPH, NEWEST, asked)
    record = Ledger(catalog).create(M.new_request_id(utc_now()), spec, "code-1", spec.excluded_cells(GRAPH))
    assert Ledger(catalog).get(record.request_id).spec == spec


def test_a_serial_request_defaults_to_one_interval_at_a_time_and_reads_back_so(catalog):
    spec = build_spec(GRAPH, NEWEST, RequestInput(assets=[CUSTOMER_SNAPSHOT], from_day="2022-10-01",
                                                  to_day="2022-10-03"))
    record = Ledger(catalog).create(M.new_request_id(utc_now()), spec, "code-1", {})
    read = Ledger(catalog).get(record.request_id).spec
    assert (read.max_active, read.serial, read.effective_max_active, read.order) == (1, True, 1, "forward")
