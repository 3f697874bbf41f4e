"""The library's own OpenLineage facets: the identity of an attempt, its four times, the publish decision, and the
version a dataset stands for. Their JSON schema ships beside this module (``facets.schema.json``).

Custom facets follow OpenLineage's rules: each derives from the client's facet base (so it carries ``_producer``
and ``_schemaURL``), its key is prefixed with the producer (``backfill_…``) and its fields are camelCase.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import attr
from openlineage.client.generated.base import DatasetFacet, RunFacet

# The facets' schema version: bump it with any change to a facet's fields (and to facets.schema.json).
FACETS_VERSION = "1-0-0"
SCHEMA_FILE = Path(__file__).with_name("facets.schema.json")
# No public home is published yet: the producer and the schema are named by URN (a URI, as the spec asks); the
# schema itself ships in the package (SCHEMA_FILE).
SCHEMA_URL = f"urn:backfill_assets:lineage:facets:{FACETS_VERSION}"

IDENTITY_FACET = "backfill_identity"
TIMES_FACET = "backfill_times"
PUBLISH_FACET = "backfill_publish"
VERSION_FACET = "backfill_version"


@lru_cache(maxsize=1)
def producer() -> str:
    """This library, by name and installed version: the ``producer`` of every event and facet it makes."""
    try:
        version = metadata.version("backfill_assets")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"urn:backfill_assets:{version}"


def facets_schema() -> dict[str, Any]:
    return json.loads(SCHEMA_FILE.read_text())


@attr.define
class BackfillIdentityRunFacet(RunFacet):
    """Which version this attempt writes, for which interval, in which request and run."""

    asset: str
    partitionKey: str  # noqa: N815
    versionId: str  # noqa: N815
    logicalRunId: str  # noqa: N815
    dagsterRunId: str  # noqa: N815
    attemptNo: int  # noqa: N815
    codeVersion: str  # noqa: N815
    paramsDigest: str  # noqa: N815
    lane: str
    requestId: str | None = attr.field(default=None)  # noqa: N815
    worker: str | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_URL}#/$defs/BackfillIdentityRunFacet"


@attr.define
class BackfillTimesRunFacet(RunFacet):
    """The four times of a version (docs/ARCHITECTURE.md#identity), UTC ISO-8601; later ones null until they happen."""

    intervalStart: str  # noqa: N815
    intervalEnd: str  # noqa: N815
    requestedAt: str | None = attr.field(default=None)  # noqa: N815
    startedAt: str | None = attr.field(default=None)  # noqa: N815
    endedAt: str | None = attr.field(default=None)  # noqa: N815
    publishedAt: str | None = attr.field(default=None)  # noqa: N815

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_URL}#/$defs/BackfillTimesRunFacet"


@attr.define
class BackfillPublishRunFacet(RunFacet):
    """The gate's decision on the version: published (the pointer moved to it) or rejected (it did not)."""

    decision: str
    versionId: str  # noqa: N815
    previousVersionId: str | None = attr.field(default=None)  # noqa: N815
    servingVersionId: str | None = attr.field(default=None)  # noqa: N815
    failedChecks: list[str] = attr.field(factory=list)  # noqa: N815
    reason: str | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_URL}#/$defs/BackfillPublishRunFacet"


@attr.define
class BackfillVersionDatasetFacet(DatasetFacet):
    """The one version of one partition a dataset stands for in this event, and its state then."""

    versionId: str  # noqa: N815
    partitionKey: str  # noqa: N815
    state: str
    path: str | None = attr.field(default=None)
    rows: int | None = attr.field(default=None)
    sha256: str | None = attr.field(default=None)

    @staticmethod
    def _get_schema() -> str:
        return f"{SCHEMA_URL}#/$defs/BackfillVersionDatasetFacet"
