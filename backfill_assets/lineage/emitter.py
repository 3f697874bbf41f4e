"""The gate's observer that sends each attempt's stages as OpenLineage events, best effort.

A send that fails (receiver down, refused, slow past its timeout, a file not writable) is reported through
``warn`` and dropped: lineage never fails, retries or changes a publish. After a failure the process sends nothing
to that target for ``PAUSE_AFTER_FAILURE_SECONDS``: a receiver that is down (or a host that swallows packets,
where each send waits out its timeout) then costs a year's backfill one timeout a minute, not one per day.
"""

from __future__ import annotations

import sys
import time
from typing import Callable

from openlineage.client import OpenLineageClient
from openlineage.client.serde import Serde
from openlineage.client.transport.transport import Config, Transport

from backfill_assets.engine.wap.observer import AttemptEvent
from backfill_assets.lineage.config import LineageTarget, LineageTransport
from backfill_assets.lineage.events import LineageNaming, attempt_events


class StdoutConfig(Config):
    """No settings: the step's standard output."""


class StdoutTransport(Transport):
    """One JSON line per event on standard output, which Dagster keeps in the step's logs. (OpenLineage's own
    ``console`` transport logs at INFO through Python logging, which a Dagster step does not show by default.)"""

    kind = "backfill_stdout"
    config_class = StdoutConfig

    def __init__(self, config: StdoutConfig | None = None) -> None:
        del config

    def emit(self, event) -> None:  # type: ignore[no-untyped-def, override]
        sys.stdout.write(Serde.to_json(event) + "\n")
        sys.stdout.flush()


def client_for(target: LineageTarget) -> OpenLineageClient:
    """A client sending where ``target`` says; with OPENLINEAGE_CONFIG the client reads OpenLineage's own config
    (files and variables) now, at run time."""
    if target.transport is LineageTransport.CONSOLE:
        return OpenLineageClient(transport=StdoutTransport())
    config = target.transport_config()
    if config is None:
        return OpenLineageClient()
    return OpenLineageClient(config={"transport": config})


PAUSE_AFTER_FAILURE_SECONDS = 60.0
# target → monotonic time before which this process sends it nothing (it failed just before).
_PAUSED_UNTIL: dict[str, float] = {}


class OpenLineageObserver:
    """Maps each stage of an attempt to run events (``events.attempt_events``) and sends them."""

    def __init__(
        self,
        target: LineageTarget,
        naming: LineageNaming,
        warn: Callable[[str], None],
        client: OpenLineageClient | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.target = target
        self.naming = naming
        self.warn = warn
        self._client = client
        self._clock = clock

    def client(self) -> OpenLineageClient:
        # Made at the first event: a step that never begins an attempt never builds a transport.
        if self._client is None:
            self._client = client_for(self.target)
        return self._client

    def observe(self, event: AttemptEvent) -> None:
        where = self.target.describe()
        if self._clock() < _PAUSED_UNTIL.get(where, 0.0):
            self.warn(
                f"OpenLineage events of {event.stage.value} {event.version.version_id} skipped: {where} failed "
                f"less than {PAUSE_AFTER_FAILURE_SECONDS:.0f} s ago; the attempt goes on without them"
            )
            return
        try:
            run_events = attempt_events(event, self.naming)
        except Exception as exc:  # noqa: BLE001 — a record the mapping cannot express: warn, like a failed send
            self.warn(f"OpenLineage events of {event.stage.value} {event.version.version_id} not built: "
                      f"{type(exc).__name__}: {exc}; the attempt goes on without them")
            return
        for run_event in run_events:
            try:
                self.client().emit(run_event)
            except Exception as exc:  # noqa: BLE001 — any transport error: warn and go on
                _PAUSED_UNTIL[where] = self._clock() + PAUSE_AFTER_FAILURE_SECONDS
                self.warn(
                    f"OpenLineage {run_event.eventType.value if run_event.eventType else ''} event for "
                    f"{event.version.version_id} not sent to {where}: {type(exc).__name__}: {exc}; the attempt "
                    f"goes on without it, and nothing is sent there for {PAUSE_AFTER_FAILURE_SECONDS:.0f} s"
                )
                # The rest of this stage's events would fail the same way, each waiting for its timeout.
                return
