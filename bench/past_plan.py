"""The days of the depends-on-past measurements (``bench/past.py``) and their results key; imports nothing heavy, so
the run's options and the report can name them without loading a code location."""

from __future__ import annotations

from dataclasses import dataclass

from .workspace import Sizes

KEY = "depends_on_past"
UI_DAYS = 10
CHAIN_DAYS = 15


@dataclass(frozen=True)
class PastPlan:
    """The days: the UI backfill's first, then the chain's (its first day reads the UI backfill's last)."""

    ui_days: int = UI_DAYS
    chain_days: int = CHAIN_DAYS

    @property
    def keys(self) -> list[str]:
        return Sizes(days=self.ui_days + self.chain_days).keys

    @property
    def ui_keys(self) -> list[str]:
        return self.keys[: self.ui_days]

    @property
    def chain_keys(self) -> list[str]:
        return self.keys[self.ui_days:]
