"""Where OpenLineage events go, read at run time from the library's setting (never at import).

One string, ``BackfillResource(openlineage=...)`` or else ``BACKFILL_OPENLINEAGE``:

- unset, ``""`` or ``off``: no events (the default);
- ``console``: one JSON line per event on the step's standard output (Dagster keeps it in the step's logs);
- ``file:<path>``: one JSON line per event appended to ``<path>``;
- ``http://host:port[/endpoint]`` or ``https://…``: POSTed to an OpenLineage receiver (Marquez, …); the endpoint
  defaults to OpenLineage's ``api/v1/lineage``;
- ``openlineage``: OpenLineage's own configuration decides (``OPENLINEAGE_CONFIG`` / ``openlineage.yml`` /
  ``OPENLINEAGE__TRANSPORT__…`` / ``OPENLINEAGE_URL``): Kafka, auth, compression and the rest, without this
  library modelling them.

The job namespace is ``BackfillResource(openlineage_namespace=...)``, else ``BACKFILL_OPENLINEAGE_NAMESPACE``,
else ``backfill_assets``.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from enum import Enum
from pathlib import Path
from typing import Any, Mapping
from urllib.parse import urlsplit

from backfill_assets.engine.model.errors import InvalidInput

ENV_OPENLINEAGE = "BACKFILL_OPENLINEAGE"
ENV_OPENLINEAGE_NAMESPACE = "BACKFILL_OPENLINEAGE_NAMESPACE"
DEFAULT_NAMESPACE = "backfill_assets"
OPENLINEAGE_ENDPOINT = "api/v1/lineage"
# A receiver that is down costs a step at most about this (connect refused is immediate; a silent host waits).
HTTP_TIMEOUT_SECONDS = 5.0
# Few, short retries: the events are best effort and the step waits for them.
HTTP_RETRY = {"total": 2, "connect": 2, "read": 1, "backoff_factor": 0.1}

_FORMS = "off, console, file:<path>, http(s)://host[:port][/endpoint] or openlineage"


class LineageTransport(Enum):
    OFF = "off"
    CONSOLE = "console"
    FILE = "file"
    HTTP = "http"
    # OpenLineage's own configuration (openlineage.yml, OPENLINEAGE__… variables) chooses the transport.
    OPENLINEAGE_CONFIG = "openlineage"


@dataclass(frozen=True)
class LineageTarget:
    transport: LineageTransport
    # The file's path (FILE) or the receiver's base URL (HTTP).
    location: str = ""
    endpoint: str = OPENLINEAGE_ENDPOINT
    namespace: str = DEFAULT_NAMESPACE

    @property
    def enabled(self) -> bool:
        return self.transport is not LineageTransport.OFF

    def transport_config(self) -> dict[str, Any] | None:
        """The ``transport`` block of an OpenLineage client config, or None where OpenLineage's own config (or our
        console writer) decides."""
        if self.transport is LineageTransport.FILE:
            # append: one file of JSON lines (without it the client writes one timestamped file per event).
            return {"type": "file", "log_file_path": self.location, "append": True}
        if self.transport is LineageTransport.HTTP:
            return {
                "type": "http", "url": self.location, "endpoint": self.endpoint,
                "timeout": HTTP_TIMEOUT_SECONDS, "retry": dict(HTTP_RETRY),
            }
        return None

    def describe(self) -> str:
        if self.transport is LineageTransport.HTTP:
            return f"http {self.location}/{self.endpoint}"
        return f"{self.transport.value} {self.location}".strip()


OFF = LineageTarget(LineageTransport.OFF)


def parse_lineage_setting(setting: str | None, namespace: str | None = None) -> LineageTarget:
    """The target a setting names; a setting of none of the accepted forms is refused, naming them."""
    namespace = _valid_namespace(namespace) if namespace else DEFAULT_NAMESPACE
    text = (setting or "").strip()
    if text.lower() in ("", LineageTransport.OFF.value):
        return OFF
    if text.lower() == LineageTransport.CONSOLE.value:
        return LineageTarget(LineageTransport.CONSOLE, namespace=namespace)
    if text.lower() == LineageTransport.OPENLINEAGE_CONFIG.value:
        return LineageTarget(LineageTransport.OPENLINEAGE_CONFIG, namespace=namespace)
    if text.startswith("file:"):
        path = text.removeprefix("file:").removeprefix("//")
        if not path:
            raise InvalidInput(
                f"openlineage setting {setting!r}: file: needs a path (file:/var/log/lineage.jsonl); "
                f"accepted: {_FORMS}"
            )
        return LineageTarget(LineageTransport.FILE, str(Path(path).expanduser()), namespace=namespace)
    parts = urlsplit(text)
    if parts.scheme in ("http", "https") and parts.netloc:
        endpoint = parts.path.strip("/") or OPENLINEAGE_ENDPOINT
        return LineageTarget(LineageTransport.HTTP, f"{parts.scheme}://{parts.netloc}", endpoint, namespace)
    raise InvalidInput(f"openlineage setting {setting!r} is not one of: {_FORMS}")


def lineage_target(
    setting: str | None, namespace: str | None, environ: Mapping[str, str] | None = None
) -> LineageTarget:
    """The library's setting, else the ``BACKFILL_OPENLINEAGE*`` environment of the process running the step."""
    env = os.environ if environ is None else environ
    return parse_lineage_setting(
        setting if setting is not None else env.get(ENV_OPENLINEAGE),
        namespace or env.get(ENV_OPENLINEAGE_NAMESPACE),
    )


def _valid_namespace(namespace: str) -> str:
    if not namespace.strip() or any(ch.isspace() for ch in namespace) or len(namespace) > 200:
        raise InvalidInput(f"openlineage namespace {namespace!r} must be 1-200 characters without spaces")
    return namespace
