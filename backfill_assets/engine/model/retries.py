"""How often an asset's step is tried again after a technical fault, as plain data (Dagster's ``RetryPolicy`` is
built from it in ``integration/assets/retries.py``).

Each retry of a gated step is a new attempt (``attempt_no``) of the same logical run: it writes its own version
beside the abandoned one, never over it. A rejection, a refused input or a planning error is never retried
(the step raises ``Failure(allow_retries=False)``): only a fault that another try may not meet (a lost
connection, a storage outage, a killed worker, the transform raising) spends the asset's retries.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class StepRetries:
    """``max_retries`` tries after the first; ``delay`` seconds before each (None: at once), grown by ``backoff``
    (Dagster's ``Backoff`` value: LINEAR, EXPONENTIAL) and spread by ``jitter`` (``Jitter``: FULL, PLUS_MINUS)."""

    max_retries: int
    delay: float | None = None
    backoff: str | None = None
    jitter: str | None = None

    @property
    def attempts(self) -> int:
        """The most attempts one run of the step makes."""
        return 1 + self.max_retries

    def has_retries_left(self, attempts_made: int) -> bool:
        """Whether a step that has failed ``attempts_made`` times in one run is tried again."""
        return attempts_made < self.attempts


# A gated step (and each asset's op of a batched run): two more tries, a second apart.
GATED_RETRIES = StepRetries(max_retries=2, delay=1.0)
# A side effect: tried once. Its retries would deliver again under the same idempotency key, which the receiver
# must drop itself, so an asset retries only when it declares so.
SIDE_EFFECT_RETRIES = StepRetries(max_retries=0)
