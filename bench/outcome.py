"""What one contender's measurement produces."""

from __future__ import annotations

from dataclasses import dataclass, field

from .measure import Usage


@dataclass
class Outcome:
    contender: str  # F, N, A, O, B
    title: str
    usage: Usage
    runs: int  # orchestrator runs launched (Dagster runs, Airflow DAG runs; 0 for the floor)
    check: dict  # the correctness cross-check (days, orders, revenue)
    details: dict = field(default_factory=dict)

    def as_dict(self) -> dict:
        return {
            "contender": self.contender,
            "title": self.title,
            **self.usage.as_dict(),
            "runs": self.runs,
            "check": self.check,
            "details": self.details,
        }
