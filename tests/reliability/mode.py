"""Normal vs slow mode of the reliability suite.

``make test`` runs every fault class with a few trials; ``make reliability`` sets ``BACKFILL_RELIABILITY=slow``
for the full count. ``BACKFILL_RELIABILITY_TRIALS=N`` overrides the count in either mode.
"""

from __future__ import annotations

import os

ENV_MODE = "BACKFILL_RELIABILITY"
ENV_TRIALS = "BACKFILL_RELIABILITY_TRIALS"
ENV_REPORT = "BACKFILL_RELIABILITY_JSON"

SLOW = os.environ.get(ENV_MODE, "").strip().lower() == "slow"
NORMAL_TRIALS = 3
SLOW_TRIALS = 30
TRIALS = int(os.environ.get(ENV_TRIALS) or (SLOW_TRIALS if SLOW else NORMAL_TRIALS))

# Hypothesis examples per property.
EXAMPLES = 2000 if SLOW else 200


def trials_of(slow: int, normal: int) -> int:
    """The trial count of a class whose one trial is expensive (a whole request on a real daemon): its own numbers
    in each mode instead of TRIALS; ``BACKFILL_RELIABILITY_TRIALS`` still overrides."""
    return int(os.environ.get(ENV_TRIALS) or (slow if SLOW else normal))


# The least budget of any test: each catches a hang only (pyproject.toml's pytest timeout, for the same reason).
HANG_FLOOR_SECONDS = 900.0


def timeout(per_trial_seconds: float, fixed_seconds: float = 60.0, trials: int | None = None) -> float:
    """A pytest-timeout budget that grows with the trial count (TRIALS unless the class has its own), never below
    the hang floor: a loaded machine is slow, not hung."""
    return max(HANG_FLOOR_SECONDS, fixed_seconds + per_trial_seconds * (TRIALS if trials is None else trials))
