"""The run context a transform and its audits receive as ``run``: who is computing which interval, where this attempt
writes, and the identity in every form an execution engine accepts (docs/ENGINES.md).

An external engine (a subprocess, a Kubernetes pod, a Spark application) gets the identity as labels, so its own
logs, pods and applications can be traced back to the version: flat string labels for logs and files, Kubernetes
label-safe labels (with the full values as annotations), Spark conf and environment variables. An engine's own id
(a pod name, an application id) is recorded with the version through ``report_engine_id``, and
``backfill-assets trace`` finds the version again from it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Callable

from backfill_assets.engine.model.identity import RunIdentity
from backfill_assets.engine.model.intervals import Interval, iso

# Kubernetes: a label's name is <prefix>/<name>; a value is at most 63 characters of [A-Za-z0-9_.-], empty or
# beginning and ending with a letter or digit.
K8S_PREFIX = "backfill-assets.io/"
K8S_VALUE_MAX = 63
_K8S_VALUE_RE = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?)?\Z")
_K8S_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
# A shortened or rewritten value keeps this many hex digits of the full value's sha256 at its end.
K8S_DIGEST_CHARS = 10
# The labels a pod gets (a label selector picks on them); every flat label is also an annotation, in full.
K8S_LABELS = ("asset", "partition_key", "logical_run_id", "dagster_run_id", "attempt_no", "request_id", "lane",
              "version_id", "code_version", "params_digest")
SPARK_PREFIX = "spark.backfill."
ENV_PREFIX = "BACKFILL_RUN_"
# Inside the attempt's folder, where an external engine writes its own files: the gate writes data.parquet and
# _manifest.json beside it, once, from the frame the transform returns; gc removes the folder with the version.
ENGINE_DIR = "engine"

RecordEngineId = Callable[[str, str], None]


def k8s_label_value(value: str) -> str:
    """``value`` as a Kubernetes label value: unchanged when it already is one; otherwise its unsafe characters
    become ``_`` and, when that changed it or it is too long, it is cut and ends with ``-`` and 10 hex digits of
    the full value's sha256 (two long values that start alike get different labels). The full value is in the
    annotation of the same name, and the catalog."""
    if _K8S_VALUE_RE.fullmatch(value):
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:K8S_DIGEST_CHARS]
    head = _K8S_UNSAFE.sub("_", value)[: K8S_VALUE_MAX - K8S_DIGEST_CHARS - 1].strip("_.-")
    return f"{head}-{digest}" if head else digest


def version_label(version_id: str) -> str:
    """The version id as a label value: ``/`` becomes ``.`` (``daily_revenue.2022-10-17.<run>.1``), shortened with
    a digest only when longer than 63 characters. ``trace`` finds the version from either (engine_refs.py)."""
    return k8s_label_value(version_id.replace("/", "."))


def version_id_of_label(label: str) -> str | None:
    """The version id a ``version_label`` stands for (asset names and run ids hold no ``.``), or None when the
    label is not one (or was shortened)."""
    asset, _, rest = label.partition(".")
    parts = rest.rsplit(".", 2)
    if not asset or len(parts) != 3 or not all(parts) or not parts[2].isdigit():
        return None
    return "/".join((asset, *parts))


@dataclass(frozen=True)
class RunContext:
    """One attempt's identity, as the transform, its audits and its fingerprint get it by asking for ``run``.

    ``location`` is the attempt's own folder in the warehouse (never modified once written, never read before its
    publish); ``engine_location`` is the folder inside it where an external engine writes its output. The four times
    known while computing are the data interval, ``requested_at`` and ``started_at``; ``ended_at`` and
    ``published_at`` come later and are in the catalog.
    """

    identity: RunIdentity
    attempt_no: int
    version_id: str
    location: str
    # Records an engine's id with this version (``report_engine_id``); None outside a gated step (tests).
    record_engine_id: RecordEngineId | None = field(default=None, compare=False, repr=False)

    @property
    def asset(self) -> str:
        return self.identity.asset

    @property
    def interval(self) -> Interval:
        return self.identity.interval

    @property
    def partition_key(self) -> str:
        return self.identity.partition_key

    @property
    def request_id(self) -> str | None:
        return self.identity.request_id

    @property
    def logical_run_id(self) -> str:
        return self.identity.logical_run_id

    @property
    def dagster_run_id(self) -> str:
        return self.identity.dagster_run_id

    @property
    def code_version(self) -> str:
        return self.identity.code_version

    @property
    def params_digest(self) -> str:
        return self.identity.params_digest

    @property
    def lane(self) -> str:
        return self.identity.lane

    @property
    def requested_at(self) -> str | None:
        return self.identity.requested_at

    @property
    def started_at(self) -> str:
        return self.identity.started_at

    @property
    def engine_location(self) -> str:
        return f"{self.location.rstrip('/')}/{ENGINE_DIR}"

    @property
    def times(self) -> dict[str, str | None]:
        """The four times as far as they are known: the data interval (UTC), requested and started."""
        return {
            "interval_start": iso(self.interval.start), "interval_end": iso(self.interval.end),
            "requested_at": self.requested_at, "started_at": self.started_at,
        }

    @property
    def labels(self) -> dict[str, str]:
        """Flat string labels (``RunIdentity.labels`` and the version id): for logs, files and any engine."""
        return {**self.identity.labels(self.attempt_no), "version_id": self.version_id}

    @property
    def k8s_labels(self) -> dict[str, str]:
        """Kubernetes labels (``backfill-assets.io/<name>``): values made label-safe by ``k8s_label_value``, the
        version id by ``version_label``; the full values are ``k8s_annotations``."""
        flat = self.labels
        labels = {_k8s_key(name): k8s_label_value(flat[name]) for name in K8S_LABELS if name != "version_id"}
        labels[_k8s_key("version_id")] = version_label(self.version_id)
        return labels

    @property
    def k8s_annotations(self) -> dict[str, str]:
        """Every flat label in full, as Kubernetes annotations (no length or character limits), and the location."""
        return {_k8s_key(name): value for name, value in {**self.labels, "location": self.location}.items()}

    @property
    def spark_conf(self) -> dict[str, str]:
        """Spark conf: ``spark.app.name`` names the version; ``spark.backfill.<label>`` carries every label and the
        location, so the application's environment tab and event log say which version it computed."""
        conf = {"spark.app.name": f"backfill-assets:{self.version_id}"}
        conf.update({f"{SPARK_PREFIX}{name}": value for name, value in self.labels.items()})
        conf[f"{SPARK_PREFIX}location"] = self.location
        conf[f"{SPARK_PREFIX}engine_location"] = self.engine_location
        return conf

    @property
    def env(self) -> dict[str, str]:
        """Environment variables for a subprocess: ``BACKFILL_RUN_<LABEL>`` for every label, ``BACKFILL_RUN_LOCATION``
        and ``BACKFILL_RUN_ENGINE_LOCATION`` (where it writes)."""
        env = {f"{ENV_PREFIX}{name.upper()}": value for name, value in self.labels.items()}
        env[f"{ENV_PREFIX}LOCATION"] = self.location
        env[f"{ENV_PREFIX}ENGINE_LOCATION"] = self.engine_location
        return env

    def report_engine_id(self, engine: str, engine_id: str) -> None:
        """Record an external engine's id for this version (``engine``: what kind, e.g. ``kubernetes_pod``,
        ``spark_application``); ``backfill-assets trace <engine_id>`` then finds the version."""
        if self.record_engine_id is None:
            raise RuntimeError(f"{self.version_id}: this run context records no engine ids (not in a gated step)")
        self.record_engine_id(engine, engine_id)

    def as_dict(self) -> dict[str, Any]:
        """Everything, JSON-safe: what an external process gets (Pipes extras)."""
        return {
            "labels": self.labels, "interval": self.interval.as_dict(), "times": self.times,
            "location": self.location, "engine_location": self.engine_location, "k8s_labels": self.k8s_labels,
            "spark_conf": self.spark_conf, "params": dict(self.identity.params),
        }


def _k8s_key(name: str) -> str:
    return K8S_PREFIX + name.replace("_", "-")
