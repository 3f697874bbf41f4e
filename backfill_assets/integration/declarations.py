"""The decorators that declare a code location's assets (``gated_asset``, ``side_effect_asset``): each checks what it
is given and returns a declaration (``BackfillAsset``), the engine's ``DeclaredAsset`` with its calendar. Nothing is
built here: ``api.backfill_definitions`` sees the whole graph first, then builds the Dagster assets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping, Sequence

import dagster as dg

from backfill_assets.engine.model.asset_config import CONFIG_ARG, AssetConfig
from backfill_assets.engine.model.day_order import DayOrder, day_order
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.gates import validate_gate_name
from backfill_assets.engine.model.graph import RESERVED_ARGS, RUN_ARG, DeclaredAsset, parameter_names
from backfill_assets.engine.model.identity import parameter_name_of, validate_asset_name
from backfill_assets.engine.model.intervals import BusinessCalendar
from backfill_assets.engine.model.request_model import CONF_KEYS
from backfill_assets.engine.model.retries import GATED_RETRIES, SIDE_EFFECT_RETRIES
from backfill_assets.engine.wap.audit import Audit
from backfill_assets.engine.wap.frames import check_return_annotation
from backfill_assets.integration.assets.retries import declared_retries
from backfill_assets.integration.assets.side_effects import KEY_ARG, PAYLOAD_ARG
from backfill_assets.integration.assets.user_config import declare_config
from backfill_assets.integration.ordinary_assets import is_ordinary, ordinary_deps
from backfill_assets.integration.partitioning import check_partitioning

DEFAULT_GROUP = "default"

# Dagster's name for a step's context: a name users reach for by habit, and one this library never passes.
UNPASSED_CONTEXT = "context"


@dataclass(frozen=True)
class BackfillAsset:
    """An asset declared with ``gated_asset`` or ``side_effect_asset``; pass it to ``backfill_definitions``."""

    spec: DeclaredAsset
    calendar: BusinessCalendar
    # ``gated_asset(config=...)``: the user's Dagster Config class (the engine's spec holds its plain view).
    config_class: type[dg.Config] | None = None

    @property
    def name(self) -> str:
        return self.spec.name


Dep = str | BackfillAsset | dg.AssetKey | dg.AssetsDefinition | dg.AssetSpec


def gated_asset(
    *,
    calendar: BusinessCalendar,
    deps: Sequence[Dep] = (),
    audits: Sequence[Audit] = (),
    primary_key: Sequence[str] = (),
    schema: Mapping[str, str] | None = None,
    depends_on_past: bool = False,
    fingerprint: Callable[..., str] | None = None,
    name: str | None = None,
    description: str | None = None,
    owners: Sequence[str] = (),
    group_name: str = DEFAULT_GROUP,
    config: type[dg.Config] | None = None,
    order: DayOrder | str = DayOrder.ANY,
    parallel_days: bool = True,
    pool: str | None = None,
    target: str | None = None,
    retry_policy: dg.RetryPolicy | None = None,
    partitions_def: object = None,
    key_prefix: str | Sequence[str] | None = None,
) -> Callable[[Callable[..., Any]], BackfillAsset]:
    """A daily-partitioned data asset whose every run writes a new version, audits it and publishes it only if
    every audit passes.

    ``order`` (``DayOrder``: any, forward, backward) and ``parallel_days`` (False: one day at a time) declare how a
    backfill request may run its days; a request defaults to them and refuses an operator's contradicting choice
    (a ``depends_on_past`` asset is forward and serial; docs/ASSETS.md).

    The decorated transform takes, by name: ``interval`` (the data interval), one published frame per upstream
    in ``deps``, ``previous`` (``depends_on_past`` only: its own previous interval, None on the first day),
    ``config`` (with ``config=``: an instance of that Dagster ``Config`` class, every field with a default; a
    request sets it with ``--conf '{"<asset>": {...}}'``), ``run`` (the attempt's ``RunContext``: its identity,
    its isolated location and the labels an external engine takes; ``run_external`` hands the compute to one) and
    any resource of the code location; it returns a pandas DataFrame, a pyarrow Table or a polars DataFrame.
    ``fingerprint`` (same parameters) digests a source-reading asset's source interval, so reconcile can tell
    whether a recomputation would read the same. ``partitions_def`` exists only to be refused with the way
    forward: a gated asset's partitions are the days of ``calendar`` (docs/ASSETS.md).

    ``pool``: the Dagster pool the step waits in (its limit: ``dagster instance concurrency set POOL N``, or the
    instance's ``pools.default_limit``); without one a root asset waits in ``source_system`` and any other asset
    in none. ``target``: the write target (e.g. a warehouse) whose quota the step shares: at most
    ``BackfillResource(target_limits={target: N})`` steps write, audit and publish to it at once.

    ``retry_policy`` (``dg.RetryPolicy``, default ``max_retries=2, delay=1``): retries of a technical fault, each a new
    attempt of the same logical run (its batched op's too); a rejection is never retried.
    ``key_prefix`` (as Dagster's ``@asset``): every door names the asset as Dagster prints its key
    ("berlin/daily_usage"); a downstream transform takes it by its last segment (docs/ASSETS.md, "Key prefixes").
    """

    def decorate(transform: Callable[..., Any]) -> BackfillAsset:
        asset_name = prefixed_name(name or transform.__name__, key_prefix)
        check_partitioning(asset_name, calendar, partitions_def)
        upstream, external = _checked_inputs(asset_name, transform, deps, audits, depends_on_past)
        needs = [*parameter_names(transform), *parameter_names(fingerprint)]
        needs += [n for a in audits for n in a.needs]
        spec = DeclaredAsset(
            name=asset_name,
            description=description or _doc(transform),
            upstream=upstream,
            primary_key=tuple(primary_key),
            schema=dict(schema or {}),
            depends_on_past=depends_on_past,
            owners=tuple(owners),
            group=group_name,
            transform=transform,
            audits=tuple(audits),
            fingerprint=fingerprint,
            resources=_resources(asset_name, needs, upstream),
            config=_asset_config(asset_name, config, needs),
            **_declared_pace(asset_name, order, parallel_days, depends_on_past),
            pool=None if pool is None else validate_gate_name(pool, "pool", asset_name),
            target=None if target is None else validate_gate_name(target, "target", asset_name),
            external_upstream=external,
            retries=declared_retries(asset_name, retry_policy, GATED_RETRIES),
        )
        return BackfillAsset(spec, calendar, config)

    return decorate


def _check_audits(asset: str, audits: Sequence[Audit]) -> None:
    for check in audits:
        if not isinstance(check, Audit):
            raise InvalidInput(f"{asset}: audits must be built with backfill_assets audits or @audit")
    names = [a.name for a in audits]
    if len(set(names)) != len(names):
        raise InvalidInput(f"{asset}: two audits share a name: {names}")


def _asset_config(asset: str, config: type[dg.Config] | None, needs: Sequence[str]) -> AssetConfig | None:
    """The engine's view of ``gated_asset(config=...)``; a transform asking for ``config`` must declare one."""
    if config is None:
        if CONFIG_ARG in needs:
            raise InvalidInput(f"{asset}: takes `{CONFIG_ARG}` but declares none; pass gated_asset(config=...)")
        return None
    if asset in CONF_KEYS:
        raise InvalidInput(f"{asset}: an asset with a config may not be named like the library's own --conf key "
                           f"{asset!r}")
    return declare_config(asset, config)


def _declared_pace(asset: str, order: object, parallel_days: object, depends_on_past: bool) -> dict[str, Any]:
    """``order`` and ``parallel_days`` checked; a depends-on-past asset may not declare them otherwise."""
    declared = day_order(order, asset)
    if not isinstance(parallel_days, bool):
        raise InvalidInput(f"{asset}: parallel_days must be True or False, not {parallel_days!r}")
    if depends_on_past and declared == DayOrder.BACKWARD:
        raise InvalidInput(f"{asset}: a depends_on_past asset runs forward (each day reads the one before); "
                           "order=backward contradicts it")
    return {"order": declared.value, "parallel_days": parallel_days}


def side_effect_asset(
    *,
    calendar: BusinessCalendar,
    deps: Sequence[Dep],
    deliver: Callable[..., Any],
    idempotency_key: Callable[..., str] | None = None,
    name: str | None = None,
    description: str | None = None,
    owners: Sequence[str] = (),
    group_name: str = DEFAULT_GROUP,
    retry_policy: dg.RetryPolicy | None = None,
    key_prefix: str | Sequence[str] | None = None,
) -> Callable[[Callable[..., Any]], BackfillAsset]:
    """An asset that acts on the outside world (a notification, an external API) from published upstream data.

    The decorated function builds the message (a dict) from ``interval`` and the upstream frames; ``deliver``
    (taking ``payload``, ``idempotency_key`` and resources by name) sends it. A message is delivered at most once
    per idempotency key, by default the asset, interval and message content; backfills skip the asset unless the
    request authorizes it by name with an approver.

    ``retry_policy`` (a ``dg.RetryPolicy``; default: none, the step is tried once): a retry after ``deliver``
    raised delivers the message again under the same idempotency key, so declare one only when the receiver drops a
    key it has already seen.
    """

    def decorate(payload: Callable[..., Any]) -> BackfillAsset:
        asset_name = prefixed_name(name or payload.__name__, key_prefix)
        check_partitioning(asset_name, calendar, None)
        upstream = distinct_inputs(asset_name, [_dep_name(d) for d in deps])
        if not upstream:
            raise InvalidInput(f"{asset_name}: a side-effect asset acts on published data; name its deps")
        needs = [*parameter_names(payload), *parameter_names(deliver), *parameter_names(idempotency_key)]
        if CONFIG_ARG in needs:
            raise InvalidInput(f"{asset_name}: `{CONFIG_ARG}` is for gated assets declared with config=")
        if RUN_ARG in needs:
            raise InvalidInput(f"{asset_name}: `{RUN_ARG}` is a gated asset's attempt; a side effect writes no version")
        spec = DeclaredAsset(
            name=asset_name,
            description=description or _doc(payload),
            upstream=upstream,
            side_effect=True,
            owners=tuple(owners),
            group=group_name,
            transform=payload,
            deliver=deliver,
            idempotency_key=idempotency_key,
            resources=_resources(asset_name, needs, upstream, extra_reserved=(PAYLOAD_ARG, KEY_ARG)),
            retries=declared_retries(asset_name, retry_policy, SIDE_EFFECT_RETRIES),
        )
        return BackfillAsset(spec, calendar)

    return decorate


def _checked_inputs(
    asset_name: str, transform: Callable[..., Any], deps: Sequence[Dep], audits: Sequence[Audit],
    depends_on_past: bool,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A gated transform's declared inputs, each refused with its fix when wrong: its gated upstreams (by name)
    and its ordinary ones; its return annotation, audits and ``previous`` are checked too."""
    check_return_annotation(asset_name, transform)
    upstream = distinct_inputs(asset_name, [_dep_name(d) for d in deps if not is_ordinary(d)])
    external = ordinary_deps(asset_name, deps, parameter_names(transform))
    _check_audits(asset_name, audits)
    if "previous" in parameter_names(transform) and not depends_on_past:
        raise InvalidInput(f"{asset_name}: only a depends_on_past asset gets `previous`")
    return upstream, external


def prefixed_name(name: str, key_prefix: str | Sequence[str] | None) -> str:
    """The asset's name as the library keeps it: its key as Dagster prints it ("berlin/daily_usage"), checked."""
    if key_prefix is None:
        prefix: list[str] = []
    elif isinstance(key_prefix, str):
        prefix = [key_prefix]
    elif isinstance(key_prefix, Sequence) and all(isinstance(p, str) for p in key_prefix):
        prefix = list(key_prefix)
    else:
        raise InvalidInput(f"{name}: key_prefix must be a string or a list of strings, not {key_prefix!r}")
    if not isinstance(name, str) or "/" in name:
        raise InvalidInput(f"asset name {name!r} must be one segment; put the rest in key_prefix=[...]")
    return validate_asset_name("/".join([*prefix, name]))


def distinct_inputs(asset: str, upstream: Sequence[str]) -> tuple[str, ...]:
    """``upstream``, refused when two of its assets share the name a transform would take them by."""
    by_parameter: dict[str, str] = {}
    for name in upstream:
        other = by_parameter.setdefault(parameter_name_of(name), name)
        if other != name:
            raise InvalidInput(f"{asset}: {other} and {name} would both be the parameter {parameter_name_of(name)!r}; "
                               "a transform takes an upstream asset by the last segment of its key")
    return tuple(upstream)


def _dep_name(dep: Dep) -> str:
    if isinstance(dep, BackfillAsset):
        return dep.name
    if isinstance(dep, str):
        return validate_asset_name(dep)
    raise InvalidInput(f"deps must name gated assets (str), be declared assets, or ordinary Dagster assets (their "
                       f"AssetKey or object), not {type(dep).__name__}")


def _resources(
    asset_name: str, needs: Iterable[str], upstream: tuple[str, ...], extra_reserved: tuple[str, ...] = ()
) -> tuple[str, ...]:
    needs = list(needs)
    if UNPASSED_CONTEXT in needs:
        # Refused when declared, not when the step first runs: Dagster's step context is the wrapper's own.
        raise InvalidInput(
            f"{asset_name}: a transform, audit or hook gets no `{UNPASSED_CONTEXT}`; ask for `interval` (the data "
            "interval), `run` (the attempt's identity), `previous`, `config`, upstream assets or resources by name"
        )
    skip = {parameter_name_of(u) for u in upstream} | set(RESERVED_ARGS) | set(extra_reserved)
    return tuple(dict.fromkeys(n for n in needs if n not in skip))


def _doc(fn: Callable[..., Any]) -> str:
    return (fn.__doc__ or "").strip()
