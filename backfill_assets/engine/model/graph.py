"""The asset graph the engine works on: every asset's lineage, flags and behaviour, and the business calendar.

The engine never imports a domain. A code location declares its assets through the public API
(``backfill_assets.gated_asset`` …), which builds one ``AssetGraph``; the Dagster wiring, the sensors and the CLI
all receive that graph. Plain Python: the callables are the user's transform, audits and hooks.
"""

from __future__ import annotations

import difflib
import inspect
import sys
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Mapping

from backfill_assets.engine.model.access import AccessPolicy, CleanupPolicy
from backfill_assets.engine.model.asset_config import CONFIG_ARG, AssetConfig
from backfill_assets.engine.model.code_inputs import CodeInputs, CodeSources, find_code_sources
from backfill_assets.engine.model.errors import InvalidInput, quoted
from backfill_assets.engine.model.intervals import BusinessCalendar
from backfill_assets.engine.model.retries import GATED_RETRIES, StepRetries

STRING, FLOAT, INT, TIMESTAMP, BOOL = "string", "float", "int", "timestamp", "bool"

# What a version records for an input whose data this library does not version (an ordinary Dagster asset).
NOT_VERSIONED = "not versioned"

# Names a transform, audit or hook may ask for besides its upstream assets and resources.
INTERVAL_ARG = "interval"
PREVIOUS_ARG = "previous"  # a depends-on-past asset's own previous interval (None on the first day)
FRAME_ARG = "frame"  # an audit's written frame
RUN_ARG = "run"  # the attempt's identity, location and engine labels (engine/model/run_context.RunContext)
RESERVED_ARGS = (INTERVAL_ARG, PREVIOUS_ARG, FRAME_ARG, CONFIG_ARG, RUN_ARG)


@dataclass(frozen=True)
class DeclaredAsset:
    """One asset of the graph. ``transform`` computes a data asset's interval; a side-effect asset has
    ``payload`` (the message for an interval) and ``deliver`` (sends it) instead."""

    name: str
    description: str = ""
    upstream: tuple[str, ...] = ()
    primary_key: tuple[str, ...] = ()
    schema: Mapping[str, str] = field(default_factory=dict)
    depends_on_past: bool = False
    side_effect: bool = False
    owners: tuple[str, ...] = ()
    group: str = "default"
    transform: Callable[..., Any] | None = None
    audits: tuple[Any, ...] = ()  # audit.Audit; checked in order, file integrity always last
    # Source-reading assets: a digest of the source interval's content, so reconcile can tell whether a
    # recomputation today would read what the published version read.
    fingerprint: Callable[..., str] | None = None
    deliver: Callable[..., Any] | None = None
    idempotency_key: Callable[..., str] | None = None
    resources: tuple[str, ...] = ()  # resource keys the callables take by name
    # The asset's own run config (given by name as ``config``); None: the asset takes none.
    config: AssetConfig | None = None
    # The order its days may run in ("any", "forward", "backward") and whether several may run at once
    # (engine/model/day_order.py: a depends-on-past asset is forward and serial whatever it declares).
    order: str = "any"
    parallel_days: bool = True
    # Gates (engine/model/gates.py): the Dagster pool the step waits in (None: ``gates.pool_for``'s default for
    # its place in the graph) and the write target whose quota it shares (None: no quota).
    pool: str | None = None
    target: str | None = None
    # Ordinary (not gated) assets this one runs after, by key ("raw/events"): an ordering dependency whose data is
    # not versioned here; its versions' inputs record them as NOT_VERSIONED.
    external_upstream: tuple[str, ...] = ()
    # How often Dagster tries its step again after a technical fault, each try a new attempt of the same logical
    # run (engine/model/retries.py); a side effect declares its own (by default none).
    retries: StepRetries = GATED_RETRIES

    @property
    def is_data_asset(self) -> bool:
        return not self.side_effect


class AssetGraph:
    """Assets in topological order (upstream first, then declaration order) over one business calendar, with the
    code location's access and cleanup policies (every door that loads the code location gets the same)."""

    def __init__(
        self, calendar: BusinessCalendar, specs: Iterable[DeclaredAsset], access: AccessPolicy | None = None,
        cleanup: CleanupPolicy | None = None, location: str = "", code_inputs: CodeInputs | None = None,
    ):
        self.calendar = calendar
        # The code location's name on a shared catalog (engine/store/asset_owners.py); empty: unnamed, claims none.
        self.location = location
        self.access = access or AccessPolicy()
        self.cleanup = cleanup or CleanupPolicy()
        # What the code location adds to, or leaves out of, its code version (engine/model/code_inputs.py).
        self.code_inputs = code_inputs or CodeInputs()
        given = list(specs)
        by_name: dict[str, DeclaredAsset] = {}
        for spec in given:
            if spec.name in by_name:
                raise InvalidInput(f"asset {spec.name!r} is declared twice")
            by_name[spec.name] = spec
        for spec in given:
            for upstream in spec.upstream:
                if upstream not in by_name:
                    raise InvalidInput(_unknown_upstream(spec.name, upstream, list(by_name)))
                if by_name[upstream].side_effect:
                    raise InvalidInput(f"{spec.name} reads side-effect asset {upstream}, which has no data")
        self._specs = {name: by_name[name] for name in _topological_names(given)}
        self._index = {name: i for i, name in enumerate(self._specs)}
        # Asked once per published cell by reconcile's downstream report: worked out once here.
        self._downstream = {name: tuple(s.name for s in self._specs.values() if name in s.upstream)
                            for name in self._specs}
        self._code_sources: CodeSources | None = None

    def __contains__(self, name: object) -> bool:
        return name in self._specs

    def __getitem__(self, name: str) -> DeclaredAsset:
        return self._specs[name]

    def __iter__(self) -> Iterator[DeclaredAsset]:
        return iter(self._specs.values())

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._specs)

    @property
    def data_assets(self) -> tuple[str, ...]:
        return tuple(n for n, s in self._specs.items() if s.is_data_asset)

    @property
    def side_effect_assets(self) -> tuple[str, ...]:
        return tuple(n for n, s in self._specs.items() if s.side_effect)

    @property
    def batchable_assets(self) -> tuple[str, ...]:
        """Assets whose days may be computed side by side, spread over several batched runs at once: a
        depends-on-past asset needs its previous day published first (``chain_assets``), and a side effect runs
        alone under its own authorization."""
        return tuple(n for n in self.data_assets if not self._specs[n].depends_on_past)

    @property
    def chain_assets(self) -> tuple[str, ...]:
        """Depends-on-past data assets: their consecutive days may share one run, walked in order, one run of
        the asset at a time (the next run's first day reads the previous run's last day)."""
        return tuple(n for n in self.data_assets if self._specs[n].depends_on_past)

    @property
    def chunk_assets(self) -> tuple[str, ...]:
        """The assets a batched (chunk) run can write, in topological order: every data asset."""
        return self.data_assets

    def order_of(self, name: str) -> int:
        return self._index[name]

    def downstream_of(self, asset: str) -> list[str]:
        """Assets that read ``asset`` directly, in topological order."""
        return list(self._downstream.get(asset, ()))

    def topological(self, assets: Iterable[str]) -> list[str]:
        return sorted(assets, key=self._index.__getitem__)

    def code_sources(self) -> CodeSources:
        """What the code location's code version covers besides this library: the files of the top-level packages
        its transforms and hooks come from (modules and data files), of the first-party packages they import, and
        the installed distributions they import (engine/model/code_inputs.py). Found once: the driver and every
        step ask, and the loaded code does not change."""
        if self._code_sources is None:
            modules = self.code_modules()
            self._code_sources = find_code_sources(sorted(modules), self.code_inputs, module_files=modules)
        return self._code_sources

    def code_modules(self) -> dict[str, str | None]:
        """The modules the transforms and hooks come from, each with its file (None: built in): where the code
        version starts looking (``code_sources``)."""
        names = {
            getattr(inspect.unwrap(fn), "__module__", None) or ""  # a decorated transform: its own module
            for spec in self._specs.values()
            for fn in (spec.transform, spec.fingerprint, spec.deliver, spec.idempotency_key)
            if fn is not None
        }
        return {name: getattr(sys.modules.get(name), "__file__", None) for name in sorted(names - {""})}

    def require(self, name: object, data_only: bool = True) -> DeclaredAsset:
        """The spec of a known asset, or a one-line error naming the known ones."""
        known = self.data_assets if data_only else self.names
        if not isinstance(name, str) or name not in known:
            raise InvalidInput(f"unknown asset {quoted(name)}; known: {', '.join(known)}")
        return self._specs[name]


def _topological_names(specs: list[DeclaredAsset]) -> list[str]:
    """Kahn's algorithm, stable on declaration order; a cycle is an error naming its assets."""
    remaining = {s.name: set(s.upstream) for s in specs}
    order: list[str] = []
    while remaining:
        ready = [name for name, ups in remaining.items() if not ups]
        if not ready:
            raise InvalidInput(f"the assets form a cycle: {', '.join(sorted(remaining))}")
        for name in ready:
            order.append(name)
            del remaining[name]
        for ups in remaining.values():
            ups.difference_update(ready)
    return order


def call_with(fn: Callable[..., Any], available: Mapping[str, Any], what: str) -> Any:
    """Call a user function passing, by parameter name, what it asks for (Dagster's own convention for
    resources). A parameter nothing provides is a clear error naming the function, not a TypeError deep inside."""
    params = inspect.signature(fn).parameters
    kwargs: dict[str, Any] = {}
    for name, param in params.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        if name in available:
            kwargs[name] = available[name]
        elif param.default is inspect.Parameter.empty:
            raise InvalidInput(
                f"{what}: parameter {name!r} is neither the interval, an upstream asset nor a resource "
                f"(available: {', '.join(sorted(available))})"
            )
    return fn(**kwargs)


def _unknown_upstream(asset: str, upstream: str, known: list[str]) -> str:
    close = difflib.get_close_matches(upstream, known, n=1)
    if close:
        return f"{asset} reads {upstream!r}, which is not an asset of this graph; did you mean {close[0]!r}?"
    return (f"{asset} reads {upstream!r}, which is not a gated asset of this code location; an ordinary Dagster asset "
            f"goes in deps by its key or object (deps=[dg.AssetKey({_key_literal(upstream)})]): an ordering "
            "dependency whose data the transform reads through a resource")


def _key_literal(name: str) -> str:
    """How the user writes the AssetKey of ``name``: a string for one segment, a list for a prefixed key."""
    segments = name.split("/")
    return repr(segments[0]) if len(segments) == 1 else repr(segments)


def parameter_names(fn: Callable[..., Any] | None) -> tuple[str, ...]:
    if fn is None:
        return ()
    return tuple(
        name
        for name, p in inspect.signature(fn).parameters.items()
        if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)
    )
