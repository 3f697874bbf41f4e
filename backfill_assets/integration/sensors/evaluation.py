"""What a sensor evaluation acts on, built once per code server process instead of once per tick.

In a code server, ``context.instance`` (and ``context.resources``, which builds it) makes a new ``DagsterInstance``
from the daemon's instance ref on every evaluation, and each one checks every storage's schema revision by loading
Alembic's migration scripts: about 0.1 s of CPU per tick, nine tenths of an idle tick's cost, for sensors that the
product's daemon evaluates about once a second while work flows. The library's sensors therefore take the instance
from ``evaluation_instance`` (one per instance ref and process) and the ``BackfillResource`` given to
``backfill_definitions`` from their builder, and declare no resources.
"""

from __future__ import annotations

import threading

import dagster as dg

from backfill_assets.integration.resources import BackfillResource

_lock = threading.Lock()
_instances: dict[str, dg.DagsterInstance] = {}


def evaluation_instance(context: dg.SensorEvaluationContext) -> dg.DagsterInstance:
    """The instance this evaluation acts on: the one a test built the context with, otherwise this process's
    instance for the context's instance ref (made on first use, kept for the process's life)."""
    ref = context.instance_ref
    if ref is None:
        return context.instance
    key = dg.serialize_value(ref)
    with _lock:
        if key not in _instances:
            _instances[key] = dg.DagsterInstance.from_ref(ref)
        return _instances[key]


class SensorResource:
    """The ``BackfillResource`` a sensor uses, its config (``dg.EnvVar`` fields) resolved on first use.

    Resolved inside Dagster's context manager, never with ``process_config_and_initialize()``: that one builds an
    init context around an ephemeral ``DagsterInstance`` that it enters and leaves entered until the context is
    garbage collected. Entering an instance sets Dagster's current defs-state storage (a context variable); leaving
    it at collection time, after other instances came and went, restores the storage of an instance that may be
    gone, and the next definitions load fails with "Attempted to resolve undefined DagsterInstance weakref"."""

    def __init__(self, resource: BackfillResource | None):
        self._given = resource or BackfillResource()
        self._resolved: BackfillResource | None = None

    def get(self) -> BackfillResource:
        if self._resolved is None:
            with self._given.process_config_and_initialize_cm() as resolved:
                self._resolved = resolved
        return self._resolved
