"""An asset's retries (``gated_asset(retry_policy=...)``, ``side_effect_asset(retry_policy=...)``): Dagster's
``RetryPolicy`` checked when the asset is declared and kept as the engine's plain ``StepRetries`` (reconcile reads
it), then given back to Dagster as the same policy on the asset's step and on its op of a batched run."""

import dagster as dg

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.retries import StepRetries

RETRY_POLICY_ARG = "retry_policy"


def declared_retries(asset: str, retry_policy: object, default: StepRetries) -> StepRetries:
    """``retry_policy`` as plain data (``default`` when None); anything but a ``dg.RetryPolicy`` is refused."""
    if retry_policy is None:
        return default
    if not isinstance(retry_policy, dg.RetryPolicy):
        raise InvalidInput(
            f"{asset}: {RETRY_POLICY_ARG} must be a dagster RetryPolicy (e.g. dg.RetryPolicy(max_retries=3, "
            f"delay=1)), not {type(retry_policy).__name__} {retry_policy!r}"
        )
    if retry_policy.max_retries < 0:
        raise InvalidInput(f"{asset}: {RETRY_POLICY_ARG}.max_retries must be 0 or more, not {retry_policy.max_retries}")
    return StepRetries(
        max_retries=retry_policy.max_retries,
        delay=None if retry_policy.delay is None else float(retry_policy.delay),
        backoff=retry_policy.backoff.value if retry_policy.backoff is not None else None,
        jitter=retry_policy.jitter.value if retry_policy.jitter is not None else None,
    )


def retry_policy_of(retries: StepRetries) -> dg.RetryPolicy | None:
    """The step's Dagster policy (None: no retry, as Dagster's default)."""
    if not retries.max_retries:
        return None
    return dg.RetryPolicy(
        max_retries=retries.max_retries,
        delay=retries.delay,
        backoff=dg.Backoff(retries.backoff) if retries.backoff else None,
        jitter=dg.Jitter(retries.jitter) if retries.jitter else None,
    )
