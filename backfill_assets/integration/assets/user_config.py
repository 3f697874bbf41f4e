"""A gated asset's own config: the user's Dagster ``Config`` class (``gated_asset(config=...)``).

Checked when the asset is declared (a ``Config`` subclass, a default for every field), turned into the engine's
plain ``AssetConfig`` (field names and a validator that checks a request's conf with Dagster's own config types, so
``request create`` refuses what the run would refuse), merged beside the library's own op config so one run config
carries both, and read back in the step as an instance of the user's class plus the normalized values that go into
the version's params digest.
"""

import json
import re
import types
import typing
from dataclasses import dataclass
from typing import Any, Mapping

import dagster as dg
import pydantic

from backfill_assets.engine.model.asset_config import AssetConfig
from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.numbers import require_finite
from backfill_assets.integration.keys import node_name

_SCALARS = (str, int, float, bool)
# Dagster's messages name the place as "path root:ops:<op>:config:<field>[:<nested>]"; the field is what we show.
_PATH_RE = re.compile(r"\s*at path root:ops:\w+:config:?(?P<field>[\w:\[\]]*)")


@dataclass(frozen=True)
class StepConfig:
    """What one step of a configurable asset was given."""

    values: dict[str, Any]  # the user's fields from the op config as Dagster processed it (defaults included)
    instance: Any  # the user's Config object, the ``config`` its transform, audits and fingerprint receive


def declare_config(asset: str, config_class: object) -> AssetConfig:
    """The engine's view of ``config_class``; one clear InvalidInput when it is no Dagster ``Config`` class, or
    when a field has no default (a production run, or a backfill launched from Dagster, gives no conf)."""
    if isinstance(config_class, dg.Config):
        raise InvalidInput(f"{asset}: config= takes the class {type(config_class).__name__}, not an instance of it")
    if not (isinstance(config_class, type) and issubclass(config_class, dg.Config)):
        shown = config_class.__name__ if isinstance(config_class, type) else type(config_class).__name__
        raise InvalidInput(
            f"{asset}: config= must be a Dagster Config class (class MyConfig(dg.Config): ...), not {shown}"
        )
    required = [name for name, field in config_class.model_fields.items() if field.is_required()]
    if required:
        raise InvalidInput(
            f"{asset}: config field {config_class.__name__}.{required[0]} has no default; every field needs one, "
            "because runs given no conf (production, backfills launched from Dagster) use the defaults"
        )
    try:
        probe = _probe_job(asset, config_class)
        fields = config_class.to_fields_dict()
    except dg.DagsterError as exc:
        raise InvalidInput(f"{asset}: config {config_class.__name__}: {_one_line(str(exc))}") from exc
    # In the form run config takes (an enum by name), so the normalized conf is itself valid run config.
    defaults = {key: field.default_value if field.default_provided else None for key, field in fields.items()}
    return AssetConfig(
        class_name=config_class.__name__,
        fields=tuple(fields),
        normalize=_normalizer(asset, config_class, probe, defaults),
    )


def with_user_fields(base: type[dg.Config], user: type[dg.Config] | None, asset: str) -> type[dg.Config]:
    """The op config of an asset's step: the library's own fields (``base``) and the user's, side by side, so the
    Launchpad shows both and one run config gives both. A user field may not take a library field's name."""
    if user is None:
        return base
    clash = sorted(set(base.model_fields) & set(user.model_fields))
    if clash:
        raise InvalidInput(
            f"{asset}: config field(s) {', '.join(clash)} of {user.__name__} are the library's own "
            f"({base.__name__}); rename them"
        )
    # A subclass of the user's class: Dagster builds it from the run config as it builds any Config.
    return type(f"{user.__name__}With{base.__name__}", (base, user), {"__module__": user.__module__,
                                                                      "__doc__": user.__doc__ or base.__doc__})


def step_config(op_config: Mapping[str, Any] | None, user: type[dg.Config] | None) -> StepConfig | None:
    """The user's part of a step's op config, and the user's object built from it as Dagster builds one.

    Its numbers must be finite, as a request's conf must (``numbers.require_finite``): a run launched with its
    own run config (the Launchpad's YAML takes ``.inf`` and ``.nan``) is refused, not computed, and not retried."""
    if user is None:
        return None
    fields = user.to_fields_dict()
    values = {key: value for key, value in (op_config or {}).items() if key in fields}
    try:
        require_finite(values, f"config {user.__name__}")
    except InvalidInput as exc:
        raise dg.Failure(description=f"{exc}; nothing was computed", allow_retries=False) from exc
    return StepConfig(values, user(**values))


def _probe_job(asset: str, config_class: type[dg.Config]) -> dg.JobDefinition:
    """A one-op job whose op takes ``config_class``: Dagster validates a conf against it as it would the run's."""

    @dg.op(name=node_name(asset))
    def _probe(config: config_class) -> None:  # type: ignore[valid-type]
        del config

    @dg.job(name=f"{node_name(asset)}_config_probe")
    def _probe_job_def() -> None:
        _probe()

    return _probe_job_def


def _normalizer(asset: str, config_class: type[dg.Config], probe: dg.JobDefinition, defaults: dict[str, Any]):
    annotations = {
        (field.alias or name): field.annotation for name, field in config_class.model_fields.items()
    }

    def normalize(section: Mapping[str, Any]) -> dict[str, Any]:
        for key, value in section.items():
            _refuse_loose_scalar(asset, key, value, annotations.get(key))
        require_finite(section, asset)
        try:
            dg.validate_run_config(probe, {"ops": {node_name(asset): {"config": dict(section)}}})
        except dg.DagsterInvalidConfigError as exc:
            raise InvalidInput(_describe(asset, exc.errors[0].message if exc.errors else str(exc))) from None
        try:
            # The class's own validators (pydantic constraints such as Field(gt=0)) run when the step builds it:
            # build it now, so a value they refuse is refused by `request create`, not by every run.
            config_class(**section)
        except pydantic.ValidationError as exc:
            error = exc.errors()[0]
            where = ".".join(str(part) for part in error.get("loc", ()))
            raise InvalidInput(f"{asset}.{where}: {_one_line(error.get('msg', str(exc)))}") from None
        return {key: section[key] if key in section else default for key, default in defaults.items()}

    return normalize


def _refuse_loose_scalar(asset: str, key: str, value: Any, annotation: Any) -> None:
    """What Dagster would quietly accept but a frozen request must not: ``true`` for a number (a bool is an int in
    Python, so Dagster takes it as 1), and an ``{"env": ...}`` value read again by every run instead of frozen."""
    allowed = _types_of(annotation)
    if allowed is None:
        return
    if isinstance(value, bool) and bool not in allowed:
        expected = " or ".join(sorted(t.__name__ for t in allowed))
        raise InvalidInput(f"{asset}.{key}: {json.dumps(value)} is a bool; expected {expected}")
    if isinstance(value, dict) and set(value) == {"env"}:
        raise InvalidInput(f"{asset}.{key}: give the value itself; a request freezes its conf, so an environment "
                           "variable is not read at run time")


def _types_of(annotation: Any) -> set[type] | None:
    """The scalar types a field takes (``Optional[float]`` → {float}), or None when it is not a plain scalar."""
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        members = [a for a in typing.get_args(annotation) if a is not type(None)]
    else:
        members = [annotation]
    return set(members) if members and all(m in _SCALARS for m in members) else None


def _describe(asset: str, message: str) -> str:
    """Dagster's message about the probe's config, as ``<asset>.<field>: <what is wrong>`` on one line."""
    found = _PATH_RE.search(message)
    field = found.group("field").replace(":", ".") if found else ""
    text = _PATH_RE.sub("", message).removeprefix("Invalid scalar.").strip()
    return f"{asset}.{field}: {_one_line(text)}" if field else f"{asset}: {_one_line(text)}"


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]
