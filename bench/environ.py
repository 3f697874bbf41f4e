"""Setting process environment variables for a block of a benchmark, and restoring them after."""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Iterable, Iterator, Mapping


@contextmanager
def environment(values: Mapping[str, str], unset: Iterable[str] = ()) -> Iterator[None]:
    """``values`` set and ``unset`` removed inside the block; every touched variable restored after it."""
    removed = tuple(unset)
    saved = {k: os.environ.get(k) for k in (*values, *removed)}
    os.environ.update(values)
    for key in removed:
        os.environ.pop(key, None)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
