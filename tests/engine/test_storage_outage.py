"""The warehouse on S3 while its endpoint is down: every call fails with one ``StorageError`` line naming the
warehouse, the operation and the endpoint (never botocore's exception), and works again once it is back.

The outage is real: a proxy (tests/outage_proxy.py, its own process) in front of the session's S3 server refuses
new connections and resets open ones; the bucket behind it keeps every object.
"""

from __future__ import annotations

import pytest

from backfill_assets.engine.model.errors import BackfillError, StorageError
from backfill_assets.engine.store.storage import Warehouse
from tests.s3 import environment_for, forget_s3_clients

from .test_storage import revenue_frame, write


@pytest.fixture
def proxy(s3_server, tmp_path, monkeypatch):
    """S3 clients of this test go through an outage proxy; one attempt per call (the message is what is tested
    here, not botocore's retries)."""
    outage_proxy = s3_server.outage_proxy(tmp_path)
    for name, value in {**environment_for(outage_proxy.endpoint), "AWS_MAX_ATTEMPTS": "1"}.items():
        monkeypatch.setenv(name, value)
    forget_s3_clients()
    try:
        yield outage_proxy
    finally:
        outage_proxy.stop()
        forget_s3_clients()  # no cached client may keep pointing at the stopped proxy


def test_a_storage_error_is_retried_by_steps_not_refused_like_bad_input():
    # Gated steps never retry a BackfillError (a rejection stays one); a storage outage is worth their retries.
    assert issubclass(StorageError, OSError) and not issubclass(StorageError, BackfillError)


def test_every_call_fails_with_one_line_naming_the_warehouse_and_endpoint_while_s3_is_down(proxy, s3_server):
    root = s3_server.new_root()
    warehouse = Warehouse(root)
    written = write(warehouse)  # through the proxy, so the client also holds an open connection that will be reset
    calls = [
        ("reading", lambda: warehouse.read_verified(written.path, written.sha256, written.rows)),
        ("reading", lambda: warehouse.read_manifest(written.path)),
        ("creating", lambda: write(warehouse, attempt_no=2)),
        ("deleting", lambda: warehouse.remove_version(written.path)),
    ]
    with proxy.outage():
        for action, call in calls:
            with pytest.raises(StorageError) as caught:
                call()
            message = str(caught.value)
            assert message.startswith(f"warehouse storage {root} failed while {action} daily_revenue/"), message
            assert proxy.endpoint in message and "\n" not in message, message
    # Back: the same warehouse (and its cached client) reads the untouched version and writes the attempt that
    # failed, whose location the outage left empty.
    frame = warehouse.read_verified(written.path, written.sha256, written.rows)
    assert frame.equals(revenue_frame())
    second = write(warehouse, attempt_no=2)
    assert warehouse.read_verified(second.path, second.sha256, second.rows).equals(revenue_frame())
