"""The orders example as the benchmarks use it (through the public API, as any code location would)."""

from backfill_assets import graph_of
from backfill_assets.examples.orders import MODULE
from backfill_assets.examples.orders.definitions import defs as DEFS

GRAPH = graph_of(DEFS)

__all__ = ["DEFS", "GRAPH", "MODULE"]
