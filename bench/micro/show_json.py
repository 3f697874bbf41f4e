"""``request show --json`` of an open request of ``DAYS`` days x 3 assets, in-process: CPU of the service's
``show``, of the record's ``as_dict`` and of the CLI's JSON text (the median of ``REPS`` calls each, after one that
warms the process up), and the text's length. The request is synthetic (``synth.py``: its rows inserted in bulk,
every cell pending, as a ten-year request just made). ``python -m bench.micro.show_json [DAYS] [REPS]`` runs it
alone; between the code before a change and after it::

    python -m bench.micro.between_trees bench.micro.show_json shipped 3650 6 /tmp/before . --figure json_ms
"""

from __future__ import annotations

import json
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .alternating import main, measure_in_fresh_interpreter

DAYS = 3650
REPS = 5
REQUEST_ID = "req-20240101-0000beef"


def _cpu_ms(call: Callable[[], Any]) -> tuple[float, Any]:
    began = time.process_time()
    value = call()
    return (time.process_time() - began) * 1000, value


def _json_text() -> Callable[[Any], str]:
    """The CLI's ``--json`` text as the tree measured makes it."""
    try:
        from backfill_assets.cli.json_text import json_text
    except ImportError:  # before the CLI had its own: json.dumps, as ``emit`` called it
        return lambda data: json.dumps(data, indent=2, default=str, sort_keys=True)
    return json_text


def _measure(variant: str, days: int, folder: Path) -> dict:
    from backfill_assets import graph_of
    from backfill_assets.engine.store.catalog import Catalog
    from backfill_assets.service import Backfills
    from backfill_assets.service.context import ServiceContext

    from ..locations import TEN_YEARS
    from ..locations.orders_ten_years import defs
    from ..plain import ASSETS
    from .synth import days as keys_of
    from .synth import request_cells

    catalog = Catalog(f"sqlite:///{folder / 'catalog.db'}")
    request_cells(catalog, REQUEST_ID, list(ASSETS), keys_of(days, TEN_YEARS.first_day))
    # No Dagster port: the run queue's limits are the snapshot's or the instance's, read once, not per cell.
    backfills = Backfills(ServiceContext(graph=graph_of(defs), catalog=catalog))
    text_of = _json_text()
    figures: dict[str, list[float]] = {"show_ms": [], "as_dict_ms": [], "json_ms": []}
    for rep in range(REPS + 1):
        show_ms, detail = _cpu_ms(lambda: backfills.show(REQUEST_ID))
        as_dict_ms, data = _cpu_ms(detail.as_dict)
        json_ms, text = _cpu_ms(lambda data=data: text_of(data))
        if rep:  # the first warms the process up
            for name, value in (("show_ms", show_ms), ("as_dict_ms", as_dict_ms), ("json_ms", json_ms)):
                figures[name].append(value)
    return {"variant": variant, "cells": len(detail.cells), "bytes": len(text),
            **{name: round(statistics.median(values), 1) for name, values in figures.items()}}


def run(days: int = DAYS, reps: int = 1) -> dict:
    with tempfile.TemporaryDirectory(prefix="bench-show-") as folder:
        return measure_in_fresh_interpreter(["-m", "bench.micro.show_json", "--one", "shipped", str(days), folder],
                                            "show_json")


if __name__ == "__main__":
    main(_measure, run)
