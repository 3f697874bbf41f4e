"""One Dagster ``dagster-daemon run`` on a home of Dagster's own classes for the package's modules (they share an
``xdist_group``, so one worker runs them all against it), its code served by one standalone ``dagster api grpc``
(a ``grpc_server`` workspace, as on Kubernetes or Docker). Each test takes its own days of September 2022
(``test_stock_requests.py``'s docstring lists them)."""

from __future__ import annotations

import pytest

from backfill_assets.examples.orders.domain import ORDER_FACTS

from ..conftest import E2E, home_under_dagster_daemon

SEED_FROM, SEED_TO = "2022-09-01", "2022-09-17"
# The package's tests run on one worker, against the one daemon.
STOCK_GROUP = pytest.mark.xdist_group("e2e/stock")
# Dagster's timers set the pace here: a driver pass every ~5 s, a dequeue every 5 s, a new process per run. Both
# waits only catch a hang: on a loaded CI machine one stock run took 105 s (a 3-day request missed 150 s).
TIMEOUT = "600"
PATIENCE = float(TIMEOUT)
ADOPTION_TIMEOUT = 300.0
# A test waits on several requests in a row: pytest's own hang detector for the package, above the project's 300 s.
STOCK_PATIENCE = pytest.mark.timeout(1800)
# Run config that makes a step spoil order_facts: its audits reject the day.
DROP_ROWS = {"ops": {ORDER_FACTS: {"config": {"defect": "drop_rows"}}}}


@pytest.fixture(scope="package")
def stock(tmp_path_factory: pytest.TempPathFactory):
    """Dagster's own ``dagster-daemon run`` on a home of Dagster's own classes."""
    yield from home_under_dagster_daemon(tmp_path_factory, "stock", True, (SEED_FROM, SEED_TO))


def order_facts_versions(e2e: E2E, days: list[str]) -> dict[str, list[str]]:
    """Each day's order_facts version ids, oldest first."""
    return {day: [v.version_id for v in e2e.catalog.versions_of(ORDER_FACTS, day)] for day in days}
