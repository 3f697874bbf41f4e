"""Numbers a user gives as text or in a conf: one rule each, used by every door.

- A conf's numbers are finite: JSON's ``NaN`` and ``Infinity`` (which Python's ``json`` takes), a literal that
  overflows to infinity (``1e999``) and a Python caller's ``float("inf")`` are refused, naming where they are. An
  infinite rate makes infinite amounts, and ``inf - inf`` is NaN, which every ``>`` comparison calls False: no audit
  can be trusted with them.
- A number given as text (a ``backfill/*`` run tag, a setting) is plain ASCII digits within its bounds: Python's
  ``int`` also takes ``"²"``, ``"٣"``, ``" 3"``, ``"+3"`` and ``"1_000"``, and raises ``ValueError`` past 4,300
  digits, which would crash a sensor on every tick instead of refusing one value.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from backfill_assets.engine.model.errors import InvalidField, InvalidInput, quoted

# Plain ASCII digits, short enough that int() never meets Python's 4,300-digit limit.
_WHOLE_NUMBER_RE = re.compile(r"[0-9]{1,18}")


def non_finite_at(value: Any, path: str = "") -> tuple[str, float] | None:
    """The first non-finite float in ``value`` (nested mappings and lists) as (dotted path, the number), or
    None."""
    if isinstance(value, float):
        return None if math.isfinite(value) else (path, value)
    items: Iterable[tuple[Any, Any]]
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, list | tuple):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = non_finite_at(item, f"{path}.{key}" if path else str(key))
        if found is not None:
            return found
    return None


def require_finite(value: Any, what: str) -> Any:
    """``value`` unchanged, or ``InvalidField`` naming where its first non-finite number is. ``what`` is a field
    placeholder (``"{conf}"``) or plain text."""
    found = non_finite_at(value)
    if found is not None:
        path, number = found
        raise InvalidField(what + " {path}: {number} is not a finite number (NaN, Infinity and numbers too large "
                           "for a float, such as 1e999, are refused)", path=path or "value", number=number)
    return value


def whole_number(text: object, what: str, low: int, high: int) -> int:
    """``text`` (a run tag's value, a setting) as an int from ``low`` to ``high``: only ASCII digits, nothing
    around them; otherwise one ``InvalidInput`` line naming ``what`` and quoting a bounded prefix of the text."""
    if isinstance(text, str) and _WHOLE_NUMBER_RE.fullmatch(text) and low <= int(text) <= high:
        return int(text)
    raise InvalidInput(f"{what}={quoted(text)} must be a whole number from {low} to {high} (ASCII digits only)")
