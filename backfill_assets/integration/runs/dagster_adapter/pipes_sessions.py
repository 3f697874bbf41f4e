"""A Pipes session inside a gated step leaves the step's events to the gate.

``dg.open_pipes_session`` (under every ``PipesClient.run``) makes the step require a typed event stream: every
selected output must come as a ``MaterializeResult``, since Pipes expects the caller to yield the session's results.
A gated step reports its own events instead (the version it published, never the process's own report), and a step
writing several days reports each day as an ``AssetMaterialization``: Dagster would then fail a step whose days all
published ("did not yield or return expected outputs"). Dagster 1.13 can set the requirement but has no public way
to take it back, so the step's previous setting is restored here when the external process is done.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def events_left_to_the_gate(context: Any) -> Iterator[None]:
    """Run a Pipes session in the block; afterwards the step requires what it required before."""
    step = context.op_execution_context._step_execution_context  # noqa: SLF001 - no public way back (above)
    before = (step._requires_typed_event_stream, step._typed_event_stream_error_message)  # noqa: SLF001
    try:
        yield
    finally:
        step._requires_typed_event_stream, step._typed_event_stream_error_message = before  # noqa: SLF001
