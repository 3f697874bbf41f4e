"""Where things live. Read from the environment only when a caller asks (never at import time)."""

from __future__ import annotations

import hashlib
import os
import socket
import subprocess
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping

from backfill_assets.engine.model.code_inputs import CodeSources
from backfill_assets.engine.model.errors import InvalidInput, quoted

ENV_DAGSTER_HOME = "DAGSTER_HOME"
ENV_WAREHOUSE = "BACKFILL_WAREHOUSE"
ENV_CATALOG_URL = "BACKFILL_CATALOG_URL"
ENV_SOURCE_URL = "BACKFILL_SOURCE_URL"
ENV_CODE_VERSION = "BACKFILL_CODE_VERSION"
ENV_SINK_PATH = "BACKFILL_SINK_PATH"
# The name a worker process gives itself in every version it writes (a Celery worker's node name, a pod name).
ENV_WORKER_NAME = "BACKFILL_WORKER_NAME"
# How long a PostgreSQL catalog statement waits for a lock, and runs at most, in seconds (0: no limit). Both end
# well inside Dagster's 60 s sensor evaluation timeout, so a held lock is named by our error, not by Dagster's.
ENV_CATALOG_LOCK_TIMEOUT = "BACKFILL_CATALOG_LOCK_TIMEOUT"
ENV_CATALOG_STATEMENT_TIMEOUT = "BACKFILL_CATALOG_STATEMENT_TIMEOUT"
DEFAULT_CATALOG_LOCK_TIMEOUT = 10.0
DEFAULT_CATALOG_STATEMENT_TIMEOUT = 45.0
# The published tables every reader reads (docs/READING.md): which kinds, and where their catalogs live.
ENV_PUBLISHED_TABLES = "BACKFILL_PUBLISHED_TABLES"
ENV_ICEBERG_CATALOG_URL = "BACKFILL_ICEBERG_CATALOG_URL"
ENV_ICEBERG_CATALOG_NAME = "BACKFILL_ICEBERG_CATALOG"
ENV_ICEBERG_NAMESPACE = "BACKFILL_ICEBERG_NAMESPACE"
ENV_POSTGRES_TABLES_URL = "BACKFILL_POSTGRES_TABLES_URL"
ENV_POSTGRES_TABLES_SCHEMA = "BACKFILL_POSTGRES_TABLES_SCHEMA"
TABLE_KINDS = ("iceberg", "postgres")
ICEBERG_S3_PROPERTIES = (
    ("AWS_ENDPOINT_URL", "s3.endpoint"),
    ("AWS_DEFAULT_REGION", "s3.region"),
    ("AWS_ACCESS_KEY_ID", "s3.access-key-id"),
    ("AWS_SECRET_ACCESS_KEY", "s3.secret-access-key"),
    ("AWS_SESSION_TOKEN", "s3.session-token"),
)
DEFAULT_TABLE_KINDS = ("iceberg",)
DEFAULT_ICEBERG_NAMESPACE = "published"
DEFAULT_POSTGRES_TABLES_SCHEMA = "published"

PACKAGE_DIR = Path(__file__).resolve().parents[2]  # backfill_assets/


@dataclass(frozen=True)
class Settings:
    dagster_home: Path
    warehouse_root: str
    catalog_url: str
    source_url: str
    sink_path: str

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "Settings":
        if environ is not None:
            return cls._read(environ)
        # A gated asset-day asks ~8 times (each opening of the catalog or warehouse) and resolving the home is a
        # file-system walk: the last answer is kept for as long as what it was read from (the five variables and
        # the working directory a relative home resolves against) is unchanged, so a process whose environment
        # changes (a test switching homes) reads again.
        key = (os.getcwd(), *(os.environ.get(name) for name in _SETTINGS_VARIABLES))
        last = _last_settings
        if last is not None and last[0] == key:
            return last[1]
        settings = cls._read(os.environ)
        _remember_settings(key, settings)
        return settings

    @classmethod
    def _read(cls, env: Mapping[str, str]) -> "Settings":
        home_raw = env.get(ENV_DAGSTER_HOME)
        if not home_raw:
            raise InvalidInput(f"{ENV_DAGSTER_HOME} is not set; point it at the Dagster instance folder")
        home = home_folder(home_raw)
        return cls(
            dagster_home=home,
            warehouse_root=env.get(ENV_WAREHOUSE) or str(home / "warehouse"),
            catalog_url=env.get(ENV_CATALOG_URL) or f"sqlite:///{home / 'catalog.db'}",
            source_url=env.get(ENV_SOURCE_URL) or f"sqlite:///{home / 'source.db'}",
            sink_path=env.get(ENV_SINK_PATH) or str(home / "sink" / "alerts.jsonl"),
        )


def home_folder(raw: str) -> Path:
    """The instance folder ``raw`` names, resolved; refused when its path holds a "?": the SQLite URLs made from it
    (the catalog's, Dagster's own storage's) end at the "?", so their files would land beside it, named after the
    part before it."""
    home = Path(raw).expanduser().resolve()
    if "?" in str(home):
        raise InvalidInput(f"the Dagster instance folder {str(home)!r}: a '?' in its path cuts the SQLite URLs made "
                           "from it (their files would land elsewhere); choose a folder whose path has no '?'")
    return home


_SETTINGS_VARIABLES = (ENV_DAGSTER_HOME, ENV_WAREHOUSE, ENV_CATALOG_URL, ENV_SOURCE_URL, ENV_SINK_PATH)
_last_settings: tuple[tuple[str | None, ...], Settings] | None = None


def _remember_settings(key: tuple[str | None, ...], settings: Settings) -> None:
    global _last_settings
    _last_settings = (key, settings)  # one assignment of a tuple: a reader in another thread sees old or new


@dataclass(frozen=True)
class CatalogTimeouts:
    """PostgreSQL catalog sessions' ``lock_timeout`` and ``statement_timeout``, in seconds (0: none)."""

    lock_seconds: float = DEFAULT_CATALOG_LOCK_TIMEOUT
    statement_seconds: float = DEFAULT_CATALOG_STATEMENT_TIMEOUT

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> "CatalogTimeouts":
        env = os.environ if environ is None else environ
        return cls(
            _seconds(env, ENV_CATALOG_LOCK_TIMEOUT, DEFAULT_CATALOG_LOCK_TIMEOUT),
            _seconds(env, ENV_CATALOG_STATEMENT_TIMEOUT, DEFAULT_CATALOG_STATEMENT_TIMEOUT),
        )


@dataclass(frozen=True)
class TableSettings:
    """Which published tables each gated asset's published days form, and where: ``kinds`` ⊆ {iceberg, postgres}
    (empty: files only). Iceberg: pyiceberg's SQL catalog at ``iceberg_catalog_url`` (the catalog's database when it is
    PostgreSQL, else SQLite under DAGSTER_HOME), or a catalog of pyiceberg's own configuration (``.pyiceberg.yaml``,
    PYICEBERG_*) named ``iceberg_catalog_name`` (a REST catalog, Glue, …); table ``<namespace>.<asset>``, its
    metadata under ``<warehouse>/_tables``, its data the version files themselves. PostgreSQL: ``<schema>.<asset>`` on
    ``postgres_url`` (default: the catalog's database, when it is PostgreSQL)."""

    kinds: tuple[str, ...]
    iceberg_catalog_url: str
    iceberg_catalog_name: str | None
    iceberg_namespace: str
    postgres_url: str | None
    postgres_schema: str
    warehouse_root: str
    # pyiceberg's FileIO properties for an s3:// warehouse, from the standard AWS variables s3fs reads too, so the
    # table's metadata lands beside the versions with no second configuration.
    iceberg_io: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_env(cls, settings: "Settings", environ: Mapping[str, str] | None = None) -> "TableSettings":
        env = os.environ if environ is None else environ
        kinds = _table_kinds(env.get(ENV_PUBLISHED_TABLES))
        catalog_pg = settings.catalog_url.startswith("postgresql")
        return cls(
            kinds=kinds,
            # Beside the catalog when it is on PostgreSQL: processes on several machines (Celery workers, each with
            # its own DAGSTER_HOME) must share one table catalog, as they share the catalog.
            iceberg_catalog_url=env.get(ENV_ICEBERG_CATALOG_URL)
            or (settings.catalog_url if catalog_pg else f"sqlite:///{settings.dagster_home / 'iceberg_catalog.db'}"),
            iceberg_catalog_name=(env.get(ENV_ICEBERG_CATALOG_NAME) or "").strip() or None,
            iceberg_namespace=_identifier(env, ENV_ICEBERG_NAMESPACE, DEFAULT_ICEBERG_NAMESPACE),
            postgres_url=env.get(ENV_POSTGRES_TABLES_URL) or (settings.catalog_url if catalog_pg else None),
            postgres_schema=_identifier(env, ENV_POSTGRES_TABLES_SCHEMA, DEFAULT_POSTGRES_TABLES_SCHEMA),
            warehouse_root=settings.warehouse_root,
            iceberg_io=tuple((prop, env[var]) for var, prop in ICEBERG_S3_PROPERTIES if env.get(var)),
        )


def _table_kinds(raw: str | None) -> tuple[str, ...]:
    if raw is None or not raw.strip():
        return DEFAULT_TABLE_KINDS
    words = [w.strip().lower() for w in raw.split(",") if w.strip()]
    if words in (["none"], ["files"]):
        return ()
    unknown = [w for w in words if w not in TABLE_KINDS]
    if unknown:
        raise InvalidInput(
            f"{ENV_PUBLISHED_TABLES} must be none, or a comma-separated list of {', '.join(TABLE_KINDS)}; "
            f"{quoted(unknown[0], 40)} is none of them"
        )
    return tuple(k for k in TABLE_KINDS if k in words)


def _identifier(env: Mapping[str, str], name: str, default: str) -> str:
    raw = (env.get(name) or "").strip() or default
    if not (raw.isascii() and raw.replace("_", "a").isalnum() and not raw[0].isdigit() and len(raw) <= 63):
        raise InvalidInput(f"{name} must be a lower-case SQL identifier (letters, digits, _), not {quoted(raw, 40)}")
    return raw.lower()


def _seconds(env: Mapping[str, str], name: str, default: float) -> float:
    raw = (env.get(name) or "").strip()
    if not raw:
        return default
    try:
        value = float(raw) if raw.isascii() else float("nan")
    except ValueError:
        value = float("nan")
    if not 0 <= value <= 86_400:  # also refuses NaN
        raise InvalidInput(f"{name} must be a number of seconds from 0 to 86400, not {quoted(raw, 40)}")
    return value


def worker_label(environ: Mapping[str, str] | None = None) -> str:
    """Which process writes a version: ``BACKFILL_WORKER_NAME`` when the deployment names its workers, else
    ``host:pid`` (on Kubernetes the host is the pod). Recorded per version, so reconcile can say where a day ran."""
    env = os.environ if environ is None else environ
    named = (env.get(ENV_WORKER_NAME) or "").strip()
    return named[:200] if named else f"{socket.gethostname()}:{os.getpid()}"


def code_version(
    environ: Mapping[str, str] | None = None, sources: CodeSources | Callable[[], CodeSources] | None = None
) -> str:
    """The version of the loaded code: ``BACKFILL_CODE_VERSION``, else the git commit of this package (+ a digest
    when dirty), + ``loc-`` a digest of the code location's files outside the package (its modules, the data files
    beside them, the first-party packages they import) + ``deps-`` a digest of the names and versions of the
    installed distributions they import (``sources``: ``AssetGraph.code_sources``, engine/model/code_inputs.py),
    so that editing a team's transform, its SQL or upgrading pandas is a new code version too."""
    env = os.environ if environ is None else environ
    override = env.get(ENV_CODE_VERSION)
    if override:
        return override
    # Found only when no override is set: the override is also the way out of a code location too big to read.
    sources = sources() if callable(sources) else sources
    parts = [_code_version_from_tree()]
    if sources is not None and sources.files:
        parts.append(f"loc-{sources.files_digest()}")
    if sources is not None and sources.distributions:
        parts.append(f"deps-{sources.distributions_digest()}")
    return "+".join(parts)


@lru_cache(maxsize=1)
def _code_version_from_tree() -> str:
    digest = _package_digest()
    try:
        head = _git("rev-parse", "--short=12", "HEAD")
        dirty = _git("status", "--porcelain", "--", str(PACKAGE_DIR))
    except (OSError, subprocess.SubprocessError):
        return f"pkg-{digest}"
    # A dirty tree is a different code version from its commit: include the content digest.
    return f"git-{head}" if not dirty else f"git-{head}+{digest[:8]}"


def _git(*args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=PACKAGE_DIR, capture_output=True, text=True, timeout=5, check=True
    ).stdout.strip()


def _package_digest() -> str:
    h = hashlib.sha256()
    for path in sorted(PACKAGE_DIR.rglob("*.py")):
        h.update(str(path.relative_to(PACKAGE_DIR)).encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:12]
