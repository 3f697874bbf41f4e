"""The console scripts. Each sets the garbage collector for a process that imports Dagster (``process_gc``)
before it imports anything heavy, then hands over to its command; Ctrl-C ends either with one line and exit
status 130 (``interrupts``)."""

from __future__ import annotations

from backfill_assets.interrupts import stopped_by_ctrl_c
from backfill_assets.process_gc import collect_less_often, freeze_long_lived_objects


def backfill_assets() -> None:
    """``backfill-assets``: the product's command line."""
    with stopped_by_ctrl_c("backfill-assets"):
        collect_less_often()
        from backfill_assets.cli import main

        freeze_long_lived_objects()
        main()


def backfill_assets_daemon() -> None:
    """``backfill-assets-daemon``: dagster-daemon with its loops woken by new work."""
    with stopped_by_ctrl_c("backfill-assets-daemon"):
        collect_less_often()
        from backfill_assets.integration.daemon import main

        main()  # it freezes what it imported once its daemons' modules are in
