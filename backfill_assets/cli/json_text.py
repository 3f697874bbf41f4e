"""The text of the CLI's ``--json``: ``json.dumps(data, indent=2, sort_keys=True, default=str)`` byte for byte, in
a tenth of its time on a large request.

Python's ``json`` module uses its C encoder only without ``indent``; with it, every value of a ten-year request's
``request show`` (10,950 cells of 12 fields) went through the pure-Python encoder. Here the containers are laid out
as ``json.dumps`` lays them out, and a dict or list that holds only plain scalars (each cell) is encoded by one call
of the C encoder whose item separator carries the newline and the indentation. Anything else (a nested container,
a key that is not text, a value only ``default=str`` can word) takes the same path ``json.dumps`` takes. An empty
container counts as a plain scalar: both encoders word it ``[]`` or ``{}``.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

INDENT = "  "
# Exact types only: the C and the Python encoders word these alike (a subclass, an enum, goes the general way).
SCALARS = frozenset({str, int, float, bool, type(None)})
CONTAINERS = frozenset({list, tuple, dict})
_LEAF = json.JSONEncoder(sort_keys=True, default=str)


def json_text(data: Any) -> str:
    """``json.dumps(data, indent=2, sort_keys=True, default=str)``."""
    parts: list[str] = []
    _encode(data, 0, parts)
    return "".join(parts)


@cache
def _flat_encoder(level: int) -> json.JSONEncoder:
    """The C encoder for a flat container at ``level``: each item on its own line, indented for that level."""
    return json.JSONEncoder(sort_keys=True, default=str, separators=(",\n" + INDENT * (level + 1), ": "))


def _flat(value: Any) -> bool:
    """Whether the C encoder words ``value`` as ``json.dumps`` with ``indent`` does wherever it sits: a plain scalar,
    or an empty container (``[]``, ``{}`` either way; a reconcile version's ``checks``, ``overrides`` and ``params``
    mostly are)."""
    kind = type(value)
    return kind in SCALARS or (kind in CONTAINERS and not value)


def _encode(value: Any, level: int, parts: list[str]) -> None:
    if isinstance(value, (list, tuple)):
        _encode_list(value, level, parts)
    elif isinstance(value, dict):
        _encode_dict(value, level, parts)
    else:
        parts.append(_LEAF.encode(value))


def _encode_list(items: list[Any] | tuple[Any, ...], level: int, parts: list[str]) -> None:
    if not items:
        parts.append("[]")
        return
    inner, outer = "\n" + INDENT * (level + 1), "\n" + INDENT * level
    if all(_flat(item) for item in items):
        parts.append("[" + inner + _flat_encoder(level).encode(list(items))[1:-1] + outer + "]")
        return
    parts.append("[")
    for index, item in enumerate(items):
        parts.append(inner if index == 0 else "," + inner)
        _encode(item, level + 1, parts)
    parts.append(outer + "]")


def _encode_dict(mapping: dict[Any, Any], level: int, parts: list[str]) -> None:
    if not mapping:
        parts.append("{}")
        return
    inner, outer = "\n" + INDENT * (level + 1), "\n" + INDENT * level
    if all(type(key) is str and _flat(item) for key, item in mapping.items()):
        parts.append("{" + inner + _flat_encoder(level).encode(mapping)[1:-1] + outer + "}")
        return
    parts.append("{")
    items = sorted(mapping.items())  # as json.dumps sorts: by key, never by value
    if all(type(key) is str for key, _ in items):
        _encode_text_keyed(items, level, parts)
    else:
        for index, (key, item) in enumerate(items):
            parts.append((inner if index == 0 else "," + inner) + _key_text(key) + ": ")
            _encode(item, level + 1, parts)
    parts.append(outer + "}")


def _encode_text_keyed(items: list[tuple[str, Any]], level: int, parts: list[str]) -> None:
    """The items of a dict with text keys, sorted, that holds a container: each run of neighbouring plain scalars
    encoded by one call of the C encoder (a ten-year reconcile's 10,950 versions are such dicts, ~20 scalars
    and a few containers each), each container on its own."""
    inner = "\n" + INDENT * (level + 1)
    first, run = True, {}
    for key, item in items:
        if _flat(item):
            run[key] = item
            continue
        if run:
            parts.append((inner if first else "," + inner) + _flat_encoder(level).encode(run)[1:-1])
            first, run = False, {}
        parts.append((inner if first else "," + inner) + _LEAF.encode(key) + ": ")
        first = False
        _encode(item, level + 1, parts)
    if run:
        parts.append((inner if first else "," + inner) + _flat_encoder(level).encode(run)[1:-1])


def _key_text(key: Any) -> str:
    """A key as ``json.dumps`` words it (text as is; a number, true, false or null as its JSON text; any other key
    refused with its own TypeError): the one key of a dict it encodes."""
    return json.dumps({key: 0})[1:-len(": 0}")]
