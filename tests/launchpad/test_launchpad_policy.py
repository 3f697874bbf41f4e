"""The Launchpad's one error policy and its asking user (``integration/launchpad.py``), as plain Python: every
library error becomes a one-line ``dg.Failure`` without retries, a field error in the job's config keys; anything
else keeps its traceback."""

from __future__ import annotations

import dagster as dg
import pytest

from backfill_assets.engine.model.errors import InvalidField, NotFound, RefusedField, StorageError
from backfill_assets.integration.launchpad import (
    LAUNCHPAD_USER,
    asking_user,
    failure_line,
    library_errors_as_failure,
)


@pytest.mark.parametrize("error, line", [
    (InvalidField("{to_day} {value!r} is not a day", value="2022-13-01"), "to_day '2022-13-01' is not a day"),
    (RefusedField("{order} backward is refused: {asset} depends on the past", asset="snap"),
     "order backward is refused: snap depends on the past"),
    # Who acts when nobody is named is the run's tag on the Launchpad, not a config key.
    (InvalidField("{user} must name someone"), "dagster/user must name someone"),
    (NotFound("unknown request 'req-1'\nsecond line"), "unknown request 'req-1' second line"),
    (StorageError("warehouse storage s3://b failed while writing x: timed out"),
     "warehouse storage s3://b failed while writing x: timed out"),
])
def test_a_library_error_fails_the_run_with_one_line_and_no_retry(error, line):
    with pytest.raises(dg.Failure) as failed, library_errors_as_failure():
        raise error
    assert (failed.value.description, failed.value.allow_retries) == (line, False)
    assert failed.value.__cause__ is error


def test_a_failure_line_is_bounded():
    assert len(failure_line(NotFound("x" * 5000))) < 1100


def test_an_unexpected_exception_keeps_its_traceback():
    with pytest.raises(KeyError), library_errors_as_failure():
        raise KeyError("a bug is a bug")


@pytest.mark.parametrize("tags, user", [
    ({"dagster/user": "ana@example.com"}, "ana@example.com"),
    ({"dagster/user": "  "}, LAUNCHPAD_USER),
    ({"dagster/from_ui": "true"}, LAUNCHPAD_USER),
    ({}, LAUNCHPAD_USER),
])
def test_the_asking_user_is_the_runs_dagster_user_tag_or_launchpad(tags, user):
    assert asking_user(tags) == user
