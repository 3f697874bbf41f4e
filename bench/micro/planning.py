"""Create + dry run of a request of 10 years x 5 assets: build_spec, the facts, ``decide`` for every cell.

The calendar starts in 2012 for this one measurement (the demo's starts in 2022-09, too late for ten full years).
Also timed: storing that request (``Ledger.create``: its cells and claims) in an empty SQLite catalog.
"""

from __future__ import annotations

import time
from datetime import date

import dagster as dg

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.engine.model.intervals import BusinessCalendar, utc_now
from backfill_assets.engine.model.request_input import RequestInput, build_spec
from backfill_assets.engine.plan.planning import decide
from backfill_assets.engine.store.catalog import Catalog
from backfill_assets.engine.store.ledger import Ledger
from backfill_assets.examples.orders.domain import DEMO_TIMEZONE
from backfill_assets.integration.runs.cell_facts import cell_facts_source

from ..orders import GRAPH as ORDERS
from ..workspace import Workspace

FIRST, LAST = "2012-01-01", "2021-12-31"


def run(ws: Workspace) -> dict:
    calendar = BusinessCalendar(DEMO_TIMEZONE, date.fromisoformat(FIRST))
    graph = AssetGraph(calendar, list(ORDERS))  # the orders assets over the longer calendar
    catalog = Catalog(f"sqlite:///{ws.dir('micro') / 'plan.db'}")
    instance = dg.DagsterInstance.ephemeral()
    began = time.perf_counter()
    spec = build_spec(graph, LAST, RequestInput(assets=list(graph.names), from_day=FIRST, to_day=LAST,
                                                reprocess="failed", requested_by="bench", reason="ten years"))
    built = time.perf_counter()
    cells = [(a, p) for p in spec.ordered_partitions() for a in spec.assets]
    facts_of = cell_facts_source(graph, catalog, instance, cells)
    facts = time.perf_counter()
    decisions = [decide(spec, graph[a], facts_of(a, p)) for a, p in cells]
    decided = time.perf_counter()
    Ledger(catalog).create(M.new_request_id(utc_now()), spec, "bench", spec.excluded_cells(graph))
    stored = time.perf_counter()
    return {
        "partitions": len(spec.partitions),
        "cells": len(cells),
        "creates": sum(d.action == "create" for d in decisions),
        "build_spec_s": round(built - began, 3),
        "facts_s": round(facts - built, 3),
        "decide_s": round(decided - facts, 3),
        "dry_run_total_s": round(decided - began, 3),
        "ledger_create_s": round(stored - decided, 3),
        "target_s": 1.0,
    }
