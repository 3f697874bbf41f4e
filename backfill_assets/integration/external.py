"""Handing a gated asset's compute to an external process through Dagster Pipes (docs/ENGINES.md).

```python
@gated_asset(calendar=calendar, audits=[unique_key("meter_id", "hour")])
def meter_readings(run, pipes_subprocess_client: dg.PipesSubprocessClient) -> pd.DataFrame:
    return run_external(run, pipes_subprocess_client, command=[sys.executable, "compute_meters.py"])
```

The process gets the attempt's identity and its isolated location twice: as the Pipes extras (``backfill_run``,
``RunContext.as_dict``) and as ``BACKFILL_RUN_*`` environment variables. It writes Parquet into
``engine_location``, may log through Pipes (the lines land in the step's log) and may report its own id with a
custom message ``{"engine_id": ..., "engine": ...}``, recorded with the version. The frame it wrote is returned to
the gate, which writes, audits and publishes it like any transform's output: a failed audit rejects it and the
previous version keeps serving.
"""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Callable, Mapping
from typing import Any

import dagster as dg
import pandas as pd

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.model.run_context import RunContext
from backfill_assets.engine.wap.engine_output import read_engine_output
from backfill_assets.integration.runs.dagster_adapter import events_left_to_the_gate

EXTRAS_KEY = "backfill_run"
ENGINE_ID_KEY = "engine_id"
ENGINE_KEY = "engine"
SUBPROCESS = "subprocess"


def run_external(
    run: RunContext,
    client: dg.PipesClient,
    *,
    engine: str = SUBPROCESS,
    extras: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    read: Callable[[RunContext], pd.DataFrame] = read_engine_output,
    context: dg.AssetExecutionContext | dg.OpExecutionContext | None = None,
    **client_args: Any,
) -> pd.DataFrame:
    """Run ``client`` (a ``dg.PipesSubprocessClient``, ``PipesK8sClient`` …) for this attempt and return what the
    process wrote, for the gate to audit and publish.

    ``client_args`` go to ``client.run`` (``command=``, ``cwd=``; a Kubernetes client's ``image=``,
    ``base_pod_meta=``). ``extras`` are added to the Pipes extras beside ``backfill_run``; ``env`` to the
    ``BACKFILL_RUN_*`` variables (for clients whose ``run`` takes ``env``). ``engine`` is the kind recorded with
    an engine id the process reports without naming one. ``read`` turns the engine's output into the frame (by
    default every ``*.parquet`` in ``run.engine_location``). ``context``: the step's, found by itself when not given.
    """
    if not isinstance(run, RunContext):
        raise InvalidInput(f"run_external needs the transform's `run` (a RunContext), not {type(run).__name__}")
    step = context or dg.AssetExecutionContext.get()
    step.log.info(f"{run.version_id}: handing the compute to {engine}, writing to {run.engine_location} "
                  f"identity={json.dumps(run.labels, sort_keys=True)}")
    arguments = dict(client_args)
    arguments["extras"] = {**(extras or {}), EXTRAS_KEY: run.as_dict()}
    if "env" in inspect.signature(client.run).parameters:
        arguments["env"] = {**run.env, **(env or {})}
    elif env:
        raise InvalidInput(f"{type(client).__name__}.run takes no env; pass what the process needs as extras")
    with events_left_to_the_gate(step), warnings.catch_warnings():
        # Pipes calls its own preview API (the message reader's writer count); the library chose Pipes, a user's
        # own warnings (pytest -W error) should not fail on that choice.
        warnings.simplefilter("ignore", dg.PreviewWarning)
        invocation = client.run(context=step, **arguments)
    _record_engine_ids(run, invocation, engine, step)
    return read(run)


def _record_engine_ids(run: RunContext, invocation: Any, engine: str, step: Any) -> None:
    """Each custom message carrying an ``engine_id`` is recorded with the version; a materialization the process
    reported itself is not the version's (the gate reports that one) and is said so."""
    for message in invocation.get_custom_messages():
        if isinstance(message, Mapping) and message.get(ENGINE_ID_KEY):
            kind = str(message.get(ENGINE_KEY) or engine)
            run.report_engine_id(kind, str(message[ENGINE_ID_KEY]))
            step.log.info(f"{run.version_id}: {kind} {message[ENGINE_ID_KEY]} recorded with the version")
    reported = invocation.get_results(implicit_materializations=False)
    if reported:
        step.log.warning(f"{run.version_id}: the external process reported {len(reported)} result(s) of its own; "
                         "the gate reports the version it publishes, so they are not recorded")
