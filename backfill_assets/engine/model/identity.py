"""Names that reach file paths, and the identity of one version (asset + interval + run + attempt)."""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from dataclasses import asdict, dataclass, field
from typing import Any

from backfill_assets.engine.model.errors import InvalidField, UnsafeName, quoted
from backfill_assets.engine.model.intervals import Interval, iso

_ASSET_SEGMENT_RE = re.compile(r"^[a-z][a-z0-9_]{0,62}\Z")
# An asset's name is its Dagster key as Dagster writes it for people (``AssetKey.to_user_string``): one or more
# segments joined by "/" ("daily_usage", "berlin/daily_usage"). Its published tables are named by the segments
# joined with "__" (Dagster's own op naming), which must fit PostgreSQL's 63-byte identifiers.
ASSET_KEY_SEPARATOR = "/"
TABLE_NAME_SEPARATOR = "__"
_MAX_TABLE_NAME = 63
MAX_KEY_SEGMENTS = 8
_PARTITION_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:+-]{0,63}\Z")
_RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}\Z")


def _describe_bad(value: object) -> str | None:
    if not isinstance(value, str):
        return f"must be a string, got {type(value).__name__}"
    if value == "":
        return "is empty"
    if "\x00" in value:
        return "contains a NUL byte"
    if any(unicodedata.category(ch).startswith("C") for ch in value):
        return "contains a control character"
    if ".." in value:
        return "contains '..'"
    if "/" in value or "\\" in value:
        return "contains a path separator"
    return None


def _validate(value: object, pattern: re.Pattern[str], what: str) -> str:
    # The patterns admit no control character, NUL or separator; ".." is the one fault they let through. A good
    # name (nearly every call, several per asset-day) is then told by one match instead of a scan per character.
    if isinstance(value, str) and ".." not in value and pattern.fullmatch(value):
        return value
    problem = _describe_bad(value)
    if problem is None and isinstance(value, str):  # no problem: a string
        if pattern.fullmatch(value):
            return value
        problem = f"must match {pattern.pattern}"
    raise UnsafeName(f"{what} {quoted(value)} {problem}")


_PERSON_NAME_RE = re.compile(r"^[\w .@:+-]{1,120}\Z")


def validate_person_name(value: object, what: str, blank_ok: bool = True) -> str:
    """Who asked, approved or overrode: 1-120 letters, digits, spaces or ``. @ : + -`` (one line, safe to store and
    print); ``blank_ok`` False also refuses a name of spaces only."""
    if not isinstance(value, str) or not _PERSON_NAME_RE.fullmatch(value) or (not blank_ok and not value.strip()):
        raise InvalidField(what + " {value!r} must be 1-120 letters, digits, spaces or . @ : + -", value=value)
    return value


def validate_text(value: object, what: str, limit: int, line_breaks: bool = False) -> str:
    """Free text that is stored (a reason, a reader's label): bounded, and storable in every catalog backend —
    no NUL or other control characters (PostgreSQL refuses NUL), no lone surrogates (not encodable as UTF-8)."""
    if not isinstance(value, str) or len(value) > limit:
        raise InvalidField(what + " must be text of at most {limit} characters", limit=limit)
    allowed = "\t\n\r" if line_breaks else ""
    if any(unicodedata.category(ch) in ("Cc", "Cs") and ch not in allowed for ch in value):
        raise InvalidField(what + " {value!r} contains a control character", value=value)
    return value


def validate_asset_name(name: object) -> str:
    """A gated asset's name: its Dagster key's segments, each lowercase letters, digits and ``_`` starting with a
    letter, joined by "/" (a key prefix); every segment is checked, so no form of it climbs out of a path."""
    if isinstance(name, str) and ASSET_KEY_SEPARATOR in name and "\\" not in name:
        segments = name.split(ASSET_KEY_SEPARATOR)
        if len(segments) > MAX_KEY_SEGMENTS:
            raise UnsafeName(f"asset name {quoted(name)} has {len(segments)} segments; at most {MAX_KEY_SEGMENTS}")
        for segment in segments:
            _validate(segment, _ASSET_SEGMENT_RE, f"asset name {quoted(name)}: segment")
            if TABLE_NAME_SEPARATOR in segment:
                raise UnsafeName(f"asset name {quoted(name)}: segment {quoted(segment)} contains '__', which joins "
                                 "a prefixed key's segments in table names")
    else:
        name = _validate(name, _ASSET_SEGMENT_RE, "asset name")
    if len(table_name_of(name)) > _MAX_TABLE_NAME:
        raise UnsafeName(f"asset name {quoted(name)} is too long: its table name {table_name_of(name)!r} "
                         f"must fit {_MAX_TABLE_NAME} characters")
    return name


def asset_segments(name: str) -> tuple[str, ...]:
    """The segments of an asset's key ("berlin/daily_usage" → ("berlin", "daily_usage"))."""
    return tuple(name.split(ASSET_KEY_SEPARATOR))


def table_name_of(name: str) -> str:
    """The name an asset's published tables and Dagster op take: its key's segments joined by "__"."""
    return TABLE_NAME_SEPARATOR.join(asset_segments(name))


def parameter_name_of(name: str) -> str:
    """The parameter a transform, audit or hook takes an upstream asset's frame as: its key's last segment, as in
    Dagster (a key prefix is not part of an input's name)."""
    return asset_segments(name)[-1]


_LOCATION_RE = re.compile(r"^[A-Za-z0-9_.:-]{0,200}\Z")


def validate_location(value: object) -> str:
    """A code location's name as the catalog keeps it (a Python module path, or a name of the user's choosing)."""
    if not isinstance(value, str) or not _LOCATION_RE.fullmatch(value):
        raise InvalidField("{location} {given} must be at most 200 letters, digits or _ . : -", given=value)
    return value


def validate_partition_key(key: object) -> str:
    return _validate(key, _PARTITION_RE, "partition key")


def validate_run_id(run_id: object) -> str:
    return _validate(run_id, _RUN_ID_RE, "run id")


def make_version_id(asset: str, partition_key: str, run_id: str, attempt_no: int) -> str:
    validate_asset_name(asset)
    validate_partition_key(partition_key)
    validate_run_id(run_id)
    if isinstance(attempt_no, bool) or not isinstance(attempt_no, int) or attempt_no < 1:
        raise UnsafeName(f"attempt number {quoted(attempt_no)} must be a positive integer")
    return f"{asset}/{partition_key}/{run_id}/{attempt_no}"


def parse_version_id(version_id: str) -> tuple[str, str, str, int]:
    parts = version_id.split("/") if isinstance(version_id, str) else []
    if len(parts) < 4 or not (parts[-1].isascii() and parts[-1].isdigit()):
        raise UnsafeName(f"version id {quoted(version_id)} is not <asset>/<partition>/<run_id>/<attempt>")
    # The asset's key may itself hold "/" (a key prefix): the last three parts are always the version's own.
    asset, key, run_id, attempt = "/".join(parts[:-3]), *parts[-3:]
    if make_version_id(asset, key, run_id, int(attempt)) != version_id:
        raise UnsafeName(f"version id {quoted(version_id)} is not canonical (attempt {int(attempt)})")
    return asset, key, run_id, int(attempt)


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def params_digest(params: Any) -> str:
    """Digest of everything besides code and inputs that shapes an output (run config, request conf)."""
    return hashlib.sha256(canonical_json(params).encode()).hexdigest()[:16]


@dataclass(frozen=True)
class RunIdentity:
    """Who is computing which interval: carried into the catalog, the manifest, Parquet metadata and logs.

    ``logical_run_id`` is the run a retry belongs to (the root of its retry chain); ``dagster_run_id`` the
    physical Dagster run doing the work (an attempt of it).
    """

    asset: str
    interval: Interval
    logical_run_id: str
    dagster_run_id: str
    request_id: str | None
    code_version: str
    params_digest: str
    lane: str
    requested_at: str | None
    started_at: str
    # The process that computes this attempt (``settings.worker_label``): which worker ran which day.
    worker: str = ""
    # What ``params_digest`` digests (the injected defect, the asset's own config with its defaults), kept so
    # reconcile can show what a version was computed with, not only that two versions differ.
    params: dict[str, Any] = field(default_factory=dict)
    # The code location that computes it (``AssetGraph.location``): the first attempt claims the asset name on the
    # catalog for it (engine/store/asset_owners.py); empty claims nothing.
    location: str = ""

    def __post_init__(self) -> None:
        validate_asset_name(self.asset)
        validate_partition_key(self.interval.key)
        validate_run_id(self.logical_run_id)
        validate_run_id(self.dagster_run_id)

    @property
    def partition_key(self) -> str:
        return self.interval.key

    def labels(self, attempt_no: int) -> dict[str, str]:
        """Flat string labels: the form handed to logs, Parquet metadata and external engines."""
        return {
            "asset": self.asset,
            "partition_key": self.partition_key,
            "interval_start": iso(self.interval.start) or "",
            "interval_end": iso(self.interval.end) or "",
            "logical_run_id": self.logical_run_id,
            "dagster_run_id": self.dagster_run_id,
            "attempt_no": str(attempt_no),
            "request_id": self.request_id or "",
            "code_version": self.code_version,
            "params_digest": self.params_digest,
            "lane": self.lane,
            "worker": self.worker,
        }

    def as_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["interval"] = self.interval.as_dict()
        return data
