"""A depends-on-past chain run one day per run is carried by its runs' own ends on a home of Dagster's own classes
only (``QueuedRunCoordinator`` with its defaults, ``DefaultRunLauncher``: a new ``dagster api execute_run``
process per run, Dagster's SQLite storage) under Dagster's own ``dagster-daemon run``: the run-end tick needs none
of the library's instance classes (``test_chain_run_end_tick.py`` holds the rest on the shipped file)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.store.ledger import Ledger

from .conftest import E2E, home_under_dagster_daemon
from .test_chain_run_end_tick import (
    CHAIN,
    SEED_FROM,
    SEED_TO,
    TIMEOUT,
    assert_one_run_per_key,
    assert_queued_by_previous_runs,
    chain,
    runs_in_order,
)

pytestmark = [pytest.mark.daemon, pytest.mark.xdist_group("e2e/test_chain_run_end_tick_stock")]

DAYS = CHAIN[:4]  # three hand-offs: a sensor pass winning all of them (each ~1 in 10 under load) is ~1 in 1,000


@pytest.fixture(scope="module")
def stock_classes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[E2E]:
    yield from home_under_dagster_daemon(tmp_path_factory, "stock_classes", True, (SEED_FROM, SEED_TO))


def test_on_dagsters_own_coordinator_and_launcher_a_chain_is_queued_by_its_run_ends(stock_classes):
    request_id = chain(stock_classes, DAYS)
    stock_classes.wait(request_id, timeout=TIMEOUT)
    assert Ledger(stock_classes.catalog).get(request_id).status == M.COMPLETED
    runs = runs_in_order(stock_classes, request_id)
    assert [r.dagster_run.tags[T.DAGSTER_PARTITION] for r in runs] == DAYS
    assert_queued_by_previous_runs(runs)
    assert_one_run_per_key(stock_classes, request_id)
