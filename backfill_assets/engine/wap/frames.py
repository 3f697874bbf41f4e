"""What a transform may return: a pandas DataFrame, a pyarrow Table or a polars DataFrame.

The warehouse stores Arrow (Parquet), so all three are the same data; audits and downstream transforms keep getting
pandas, as they always have. pyarrow and polars are recognised by their module, never imported here: a project
without polars must not pay for it, and polars is not a dependency of the engine.
"""

from __future__ import annotations

import typing
from typing import Any, Callable

import pandas as pd

from backfill_assets.engine.model.errors import InvalidInput

ACCEPTED = "a pandas DataFrame, a pyarrow Table or a polars DataFrame"
# (top-level module, class name) of the frames converted to pandas with their own ``to_pandas()``.
_ARROW_FRAMES = {("pyarrow", "Table"), ("polars", "DataFrame")}
_LAZY = {("polars", "LazyFrame"): "call .collect() on it"}


def _kind(value_type: type) -> tuple[str, str]:
    return value_type.__module__.split(".")[0], value_type.__name__


def is_accepted_type(value_type: type) -> bool:
    return issubclass(value_type, pd.DataFrame) or _kind(value_type) in _ARROW_FRAMES


def as_pandas(frame: Any, what: str) -> pd.DataFrame:
    """``frame`` as the pandas DataFrame the audits and the writer take; ``what`` names the asset and day."""
    if isinstance(frame, pd.DataFrame):
        return frame
    kind = _kind(type(frame))
    if kind in _ARROW_FRAMES:
        converted: pd.DataFrame = frame.to_pandas()
        return converted
    named = f"{kind[0]}.{kind[1]}" if kind[0] != "builtins" else kind[1]
    hint = f" ({_LAZY[kind]})" if kind in _LAZY else ""
    raise InvalidInput(f"{what}: the transform returned a {named}{hint}; it must return {ACCEPTED}")


def check_return_annotation(asset: str, transform: Callable[..., Any]) -> None:
    """Refuse at declaration a transform annotated to return something no run could store (``-> dict``,
    ``-> pl.LazyFrame``, ``-> None``); an annotation that cannot be resolved here, or is not a class, is left to the
    run."""
    try:
        hints = typing.get_type_hints(transform)
    except Exception:  # noqa: BLE001 - a forward reference we cannot resolve is no reason to refuse the asset
        return
    hint = hints.get("return", typing.Any)
    if hint is typing.Any:
        return
    if hint is None:
        hint = type(None)
    if isinstance(hint, type) and not is_accepted_type(hint):
        kind = _kind(hint)
        named = hint.__name__ if kind[0] == "builtins" else f"{kind[0]}.{kind[1]}"
        raise InvalidInput(f"{asset}: the transform is annotated to return {named}; it must return {ACCEPTED}")
