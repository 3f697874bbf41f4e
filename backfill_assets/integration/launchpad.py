"""What every Launchpad job shares (``operation_jobs.py``, ``request_jobs.py``): how it is built, who asks, and its
one error policy.

- One job, one op (``<job>_op``, or the name the job keeps), run in the run's own process, in the manual lane.
- Who asks, when the config names nobody, is the run's ``dagster/user`` tag, else ``launchpad``; it goes to the
  service builder as ``user``, and what Dagster recorded of the launch (``launching_user``) as ``system_user``.
- What the run did is the service's record as the ``result`` metadata (``result_metadata``): what the CLI's
  ``--json`` prints and the Python call returns, whichever job.
- Every library error (a ``BackfillError``, a ``StorageError``) fails the run with one line and no retry: nothing
  was written. A ``FieldMessage`` names its fields as this job's config keys. Anything else is a bug and keeps its
  traceback.

No ``from __future__ import annotations`` here: Dagster reads each op's config class from its annotation.
"""

import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Optional

import dagster as dg

from backfill_assets.engine.model import request_model as M
from backfill_assets.engine.model import tags as T
from backfill_assets.engine.model.errors import BackfillError, FieldMessage, StorageError, bounded
from backfill_assets.engine.model.graph import AssetGraph
from backfill_assets.integration.first_ticks import tick_of_run
from backfill_assets.integration.launching_user import DAGSTER_USER_TAG, launching_user
from backfill_assets.integration.resources import BACKFILL_RESOURCE
from backfill_assets.integration.service_wiring import backfills_for_instance
from backfill_assets.service import Backfills

LAUNCHPAD_USER = "launchpad"
# The Launchpad's word for a service field its config has no key of its own for; every other field is a config
# key of the same name. ``user`` is who acts when nobody is named: on the Launchpad, the run's tag.
CONFIG_KEY_OF_FIELD: Mapping[str, str] = {"user": DAGSTER_USER_TAG}
# The longest failure line (a storage's own reason is not ours to bound), as the CLI's error line.
FAILURE_LINE_LIMIT = 1000

# What a job does with its config once the service is built: the op's output (the run's metadata).
Run = Callable[[dg.OpExecutionContext, Any, Backfills, str], dg.Output]


def config_key(field: str) -> str:
    """A service field as the Launchpad's config names it."""
    return CONFIG_KEY_OF_FIELD.get(field, field)


def asking_user(tags: Mapping[str, str]) -> str:
    """Who asks when the config names nobody: the run's ``dagster/user`` tag (the UI's user), else ``launchpad``."""
    return (tags.get(DAGSTER_USER_TAG) or "").strip() or LAUNCHPAD_USER


def failure_line(exc: BaseException) -> str:
    """A library error as the run's one-line failure: a field error in this job's config keys."""
    text = exc.worded(config_key) if isinstance(exc, FieldMessage) else str(exc)
    return bounded(" ".join(text.splitlines()), FAILURE_LINE_LIMIT)


@contextmanager
def library_errors_as_failure() -> Iterator[None]:
    """The one error policy of every Launchpad job: bad input, a refusal or a storage outage fails the run with
    one line and no retry (a retry would be refused the same way; a storage outage is the operator's to clear).
    Any other exception is a bug and keeps its traceback."""
    try:
        yield
    except (BackfillError, StorageError) as exc:
        raise dg.Failure(description=failure_line(exc), allow_retries=False) from exc


def result_metadata(result: Any) -> dg.MetadataValue:
    """A job's ``result`` metadata: the service's record as JSON (its ``as_dict()``, a list of them for a list; times
    as text), what the CLI's ``--json`` prints and the Python call returns."""
    plain = [_plain(item) for item in result] if isinstance(result, list) else _plain(result)
    return dg.MetadataValue.json(json.loads(json.dumps(plain, default=str)))


def _plain(result: Any) -> Any:
    return result.as_dict() if hasattr(result, "as_dict") else result


def launchpad_backfills(
    context: dg.OpExecutionContext, graph: AssetGraph, user: str, resources: frozenset[str] = frozenset(),
    select_assets: Optional[Callable[[str], tuple[str, ...]]] = None,
) -> Backfills:
    """The service a Launchpad run acts through: the backfill resource's catalog, warehouse and tables, its
    source ``launchpad``, who asks (``user``) and who Dagster saw launch the run."""
    backfill = getattr(context.resources, BACKFILL_RESOURCE)
    return backfills_for_instance(
        graph, context.instance, backfill.catalog(), M.RequestSource.LAUNCHPAD, user=user,
        warehouse=backfill.warehouse(), select_assets=select_assets, system_user=launching_user(context.run.tags),
        tables=backfill.published_tables(), resources={n: getattr(context.resources, n) for n in resources},
        # A request made here queues its first runs itself, for the module this run was loaded from.
        first_tick=tick_of_run(context.run) or False,
    )


def launchpad_job(
    graph: AssetGraph, name: str, op: str, config_class: type[dg.Config], run: Run, description: str,
    op_description: Optional[str] = None, resources: frozenset[str] = frozenset(),
    select_assets: Optional[Callable[[str], tuple[str, ...]]] = None,
) -> dg.JobDefinition:
    """A Launchpad job: one op ``op`` taking ``config_class`` that builds the service and calls ``run`` under
    the one error policy. ``resources``: the code location's resources the run opens for the service."""

    # Dagster reads the op's config schema from this annotation, a class only known at run time.
    def run_op(context: dg.OpExecutionContext, config: config_class) -> Iterator[dg.Output]:  # type: ignore[valid-type]
        with library_errors_as_failure():
            user = asking_user(context.run.tags)
            output = run(context, config, launchpad_backfills(context, graph, user, resources, select_assets), user)
        yield output

    def without_config(context: dg.OpExecutionContext) -> Iterator[dg.Output]:
        yield from run_op(context, config_class())

    # No config at all rather than an empty Config class: Dagster reads an empty one through pydantic's deprecated
    # ``__fields__``, a DeprecationWarning wherever the definitions load.
    body: Callable[..., Iterator[dg.Output]] = run_op if config_class.model_fields else without_config
    op_def = dg.op(name=op, out=dg.Out(dg.Nothing), description=op_description or description,
                   required_resource_keys={BACKFILL_RESOURCE, *resources})(body)
    return dg.JobDefinition(
        name=name,
        # One op that talks to the catalog: in the run's own process whatever executor the data steps use.
        executor_def=dg.in_process_executor,
        graph_def=dg.GraphDefinition(name=name, node_defs=[op_def]),
        description=description,
        tags={T.LANE: T.LANE_MANUAL},
    )
