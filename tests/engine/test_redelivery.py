"""How many lost workers a step survives (engine/wap/redelivery.py); the real Celery workers are in
tests/distributed/test_step_kills_workers.py."""

from __future__ import annotations

import pytest

from backfill_assets.engine.model.errors import InvalidInput
from backfill_assets.engine.wap.redelivery import (
    DEFAULT_WORKER_LOSS_LIMIT,
    ENV_WORKER_LOSS_LIMIT,
    StepDeliveries,
    lost_worker_refusal,
    worker_loss_limit,
)


@pytest.mark.parametrize("started, ended, lost", [(1, 0, 0), (2, 0, 1), (3, 0, 2), (3, 1, 1), (3, 2, 0), (1, 1, 0)])
def test_a_start_without_an_end_before_this_one_is_a_lost_worker(started, ended, lost):
    assert StepDeliveries(started, ended).lost == lost


def test_the_delivery_after_the_limit_of_lost_workers_is_refused_saying_why():
    assert lost_worker_refusal("raw_orders", StepDeliveries(started=2, ended=0), limit=2) is None
    refusal = lost_worker_refusal("raw_orders", StepDeliveries(started=3, ended=0), limit=2)
    assert refusal and "raw_orders lost its worker 2 time(s)" in refusal and "not delivered again" in refusal
    assert f"{ENV_WORKER_LOSS_LIMIT}=2" in refusal
    # A retried step whose attempts ended (failed, up for retry) lost nothing.
    assert lost_worker_refusal("raw_orders", StepDeliveries(started=3, ended=2), limit=1) is None


def test_the_limit_comes_from_the_environment_or_the_default():
    assert worker_loss_limit({}) == DEFAULT_WORKER_LOSS_LIMIT
    assert worker_loss_limit({ENV_WORKER_LOSS_LIMIT: " 5 "}) == 5


@pytest.mark.parametrize("value", ["0", "-1", "two", "1.5", "٣"])
def test_a_limit_that_is_not_a_whole_number_of_at_least_one_is_refused(value):
    with pytest.raises(InvalidInput, match=ENV_WORKER_LOSS_LIMIT):
        worker_loss_limit({ENV_WORKER_LOSS_LIMIT: value})
