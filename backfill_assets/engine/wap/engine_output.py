"""Reading what an external engine wrote into an attempt's ``engine_location``, as the frame the gate then writes,
audits and publishes like any transform's (docs/ENGINES.md)."""

from __future__ import annotations

import pandas as pd
from upath import UPath

from backfill_assets.engine.model.errors import BackfillError
from backfill_assets.engine.model.run_context import RunContext
from backfill_assets.engine.store.parquet_files import parquet_table
from backfill_assets.engine.store.storage import storage_call


class NoEngineOutput(BackfillError):
    """The external engine finished without writing a Parquet file where its run context said."""


def read_engine_output(run: RunContext) -> pd.DataFrame:
    """Every ``*.parquet`` file directly in ``run.engine_location`` (a Spark job's ``part-*`` files, a script's
    one file), read in name order into one frame."""
    folder = UPath(run.engine_location)
    with storage_call(folder, "listing", folder):
        files = sorted(folder.glob("*.parquet"), key=str) if folder.exists() else []
    if not files:
        raise NoEngineOutput(f"{run.version_id}: the external engine wrote no *.parquet file in {folder}")
    frames = []
    for path in files:
        with storage_call(folder, "reading", path):
            frames.append(parquet_table(path.read_bytes()).to_pandas())
    return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)
