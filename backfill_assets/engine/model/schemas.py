"""Logical column types: what a schema audit compares, independent of pandas' many dtype spellings."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from pandas.api.extensions import ExtensionDtype

from backfill_assets.engine.model.graph import BOOL, FLOAT, INT, STRING, TIMESTAMP


def logical_type(dtype: np.dtype[Any] | ExtensionDtype) -> str:
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return TIMESTAMP
    if pd.api.types.is_bool_dtype(dtype):
        return BOOL
    if pd.api.types.is_integer_dtype(dtype):
        return INT
    if pd.api.types.is_float_dtype(dtype):
        return FLOAT
    if pd.api.types.is_string_dtype(dtype) or pd.api.types.is_object_dtype(dtype):
        return STRING
    return str(dtype)


def logical_schema(frame: pd.DataFrame) -> dict[str, str]:
    return {str(c): logical_type(t) for c, t in frame.dtypes.items()}
