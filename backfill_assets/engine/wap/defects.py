"""Deliberate defects (run config ``inject_defect``) so tests and the demo make each blocking check fail for real."""

from __future__ import annotations

import pandas as pd

from backfill_assets.engine.model.errors import InvalidInput

DROP_ROWS = "drop_rows"
DUPLICATE_KEYS = "duplicate_keys"
BAD_SCHEMA = "bad_schema"
CORRUPT_FILE = "corrupt_file"
DEFECTS = (DROP_ROWS, DUPLICATE_KEYS, BAD_SCHEMA, CORRUPT_FILE)


def validate_defect(defect: object) -> str | None:
    if defect is None or defect == "":
        return None
    if defect not in DEFECTS:
        raise InvalidInput(f"inject_defect {defect!r} is not one of {', '.join(DEFECTS)}")
    return defect  # type: ignore[return-value]


def apply_defect(frame: pd.DataFrame, defect: str | None, schema: dict[str, str]) -> pd.DataFrame:
    """Return the frame as the defect would corrupt it (``corrupt_file`` acts on the written bytes instead)."""
    if defect == DROP_ROWS:
        return frame.iloc[: max(len(frame) - max(len(frame) // 10, 1), 0)].reset_index(drop=True)
    if defect == DUPLICATE_KEYS:
        return pd.concat([frame, frame.head(3)], ignore_index=True)
    if defect == BAD_SCHEMA:
        # A column silently changing type is the classic schema drift: numbers arriving as text.
        victim = next((c for c, t in schema.items() if t in ("float", "int")), frame.columns[-1])
        return frame.assign(**{victim: frame[victim].astype("string")})
    return frame
