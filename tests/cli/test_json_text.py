"""The CLI's ``--json`` text (cli/json_text.py) is ``json.dumps(data, indent=2, sort_keys=True, default=str)`` byte
for byte, whatever the data: flat containers go through the C encoder, the rest through the same layout."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from enum import Enum, StrEnum
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from backfill_assets.cli.json_text import json_text


class Status(StrEnum):
    OPEN = "open"


class Level(Enum):
    HIGH = 3


def dumped(data: object) -> str:
    return json.dumps(data, indent=2, sort_keys=True, default=str)


scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(),
    st.sampled_from([Status.OPEN, Level.HIGH, datetime(2024, 1, 2, 3, 4, 5, tzinfo=timezone.utc), Path("/a b"),
                     frozenset({"x"})]),
)
text_keys = st.text(max_size=8)
data = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=5), st.lists(inner, max_size=3).map(tuple),
                            st.dictionaries(text_keys, inner, max_size=5)),
    max_leaves=40,
)


@settings(max_examples=400)
@given(data)
def test_the_text_is_json_dumps_indented_sorted_and_worded_by_str(value):
    assert json_text(value) == dumped(value)


@pytest.mark.parametrize("keys", [[3, 1, 2], [1.5, -0.0, 2.0], [True, False], [None], ["b", "a"]])
def test_keys_that_are_not_text_are_worded_as_json_dumps_words_them(keys):
    value = {"outer": {key: [index] for index, key in enumerate(keys)}}
    assert json_text(value) == dumped(value)


def test_keys_json_cannot_word_or_sort_are_refused_as_json_dumps_refuses_them():
    for value in ({(1, 2): 1}, {"a": [], 1: []}, {True: [], None: []}):
        with pytest.raises(TypeError):
            dumped(value)
        with pytest.raises(TypeError):
            json_text(value)


def test_a_request_of_many_cells_is_the_same_text():
    cells = [{"asset": "raw_orders", "ordinal": i, "partition_key": f"2016-01-{i % 28 + 1:02d}", "reason": None,
              "decision": Status.OPEN if i % 2 else "pending", "note": "é\n\"}{", "ratio": i / 7} for i in range(500)]
    value = {"cells": cells, "counts": {"pending": 250}, "pauses": [], "conf": {}, "assets": ("raw_orders",)}
    assert json_text(value) == dumped(value)
