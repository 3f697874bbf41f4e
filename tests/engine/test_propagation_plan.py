"""The propagation plan over the publish log: a publish of a Dagster backfill the adoption sensor has not registered
yet holds the cursor (its downstream policy is not known yet), so a fast backfill run never loses its cascade."""

from __future__ import annotations

from backfill_assets.engine.model import tags as T
from backfill_assets.engine.plan.adoption import adopted_spec
from backfill_assets.engine.plan.propagation import plan_propagation
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS
from tests.orders import GRAPH

DAY = "2022-09-01"
RID = f"{T.ADOPTED_PREFIX}fastbkfl"


def _publish(seq: int, at: str) -> dict:
    return {"seq": seq, "asset": ORDER_FACTS, "partition_key": DAY, "version_id": f"{ORDER_FACTS}/{DAY}/r{seq}/1",
            "action": "publish", "request_id": RID, "lane": "backfill", "at": at}


def test_a_publish_of_a_backfill_not_adopted_yet_holds_the_cursor_until_it_is(catalog):
    ledger = Ledger(catalog)

    def request_of(request_id: str):
        return ledger.get(request_id) if ledger.exists(request_id) else None

    rows = [_publish(7, "2026-12-05T10:00:00+00:00")]
    waiting = plan_propagation(rows, request_of, GRAPH, lambda asset: DAY, 6, "2026-12-05T09:50:00+00:00")
    assert (waiting.cursor, waiting.cascades) == (6, {})
    # Long unadopted (its sensor stopped, say): passed over, as before.
    stale = plan_propagation(rows, request_of, GRAPH, lambda asset: DAY, 6, "2026-12-05T10:10:00+00:00")
    assert (stale.cursor, stale.cascades) == (7, {})

    spec = adopted_spec(GRAPH, ((ORDER_FACTS, DAY),), {T.DOWNSTREAM: "cascade"}, "ui-user", 2)
    ledger.create(RID, spec, "code", excluded={}, source="dagster")
    adopted = plan_propagation(rows, request_of, GRAPH, lambda asset: DAY, 6, "2026-12-05T09:50:00+00:00")
    assert adopted.cursor == 7 and (DAILY_REVENUE, DAY) in adopted.cascades[RID]
