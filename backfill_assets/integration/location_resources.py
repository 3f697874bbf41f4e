"""A code location's resources outside a run, for an operation of the service whose checks ask for them
(``register``: an asset's audits, such as a source's row count), opened as Dagster opens them for a run."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import Any

import dagster as dg

from backfill_assets.engine.model.errors import InvalidInput

Opener = Callable[[Sequence[str]], AbstractContextManager[Mapping[str, Any]]]


def resources_opener(defs: dg.Definitions) -> Opener:
    """Opens ``names`` of the definitions' resources (``dg.build_resources``: config and ``EnvVar`` resolved, a
    resource's setup and teardown run) for the block."""

    @contextmanager
    def opened(names: Sequence[str]) -> Iterator[Mapping[str, Any]]:
        declared = dict(defs.resources or {})
        missing = [n for n in names if n not in declared]
        if missing:
            raise InvalidInput(f"the code location defines no resource {', '.join(missing)}")
        with dg.build_resources({n: declared[n] for n in names}) as built:
            yield {n: getattr(built, n) for n in names}

    return opened


def given_resources(resources: Mapping[str, Any]) -> Opener:
    """Resources already open (a run's ``context.resources``), handed out as they are."""

    def opened(names: Sequence[str]) -> AbstractContextManager[Mapping[str, Any]]:
        missing = [n for n in names if n not in resources]
        if missing:
            raise InvalidInput(f"the resources {', '.join(missing)} are not open here")
        return nullcontext({n: resources[n] for n in names})

    return opened
