"""The orders demo's own resources: the source orders database and the sink alerts are sent to."""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Optional

import dagster as dg

from backfill_assets import Interval, Settings

from .source import SourceSummary, SourceSystem


@lru_cache(maxsize=8)
def source_system(url: str) -> SourceSystem:
    return SourceSystem(url)


class OrdersSource(dg.ConfigurableResource):
    """The orders database (``BACKFILL_SOURCE_URL``, default ``$DAGSTER_HOME/source.db``)."""

    url: Optional[str] = None

    def system(self) -> SourceSystem:
        return source_system(self.url or Settings.from_env().source_url)

    def summary(self, interval: Interval, attempt: str) -> SourceSummary:
        """The source's count and amount total for ``interval``, read once per ``attempt`` (its version id): the
        fingerprint recorded with a version and the checks that judge it then describe one reading of the source,
        and a new attempt (a retry, a re-run) reads it again."""
        return _summary_of_attempt(self.url or Settings.from_env().source_url, attempt, interval)


@lru_cache(maxsize=64)  # a few attempts at once per process (a chunk's assets, a step's days); older ones are done
def _summary_of_attempt(url: str, attempt: str, interval: Interval) -> SourceSummary:
    return source_system(url).summary(interval)


class AlertSink(dg.ConfigurableResource):
    """Where revenue alerts go: a JSON-lines file standing in for a chat or e-mail API."""

    path: Optional[str] = None

    def send(self, message: dict) -> None:
        sink = Path(self.path or Settings.from_env().sink_path)
        sink.parent.mkdir(parents=True, exist_ok=True)
        with sink.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(message, sort_keys=True) + "\n")
