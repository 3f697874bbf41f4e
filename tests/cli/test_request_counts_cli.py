"""``request list``, ``request show`` and ``wait``'s summary count a request's cells alike (one counting function,
``service.records.headline_counts``): a failed cell is failed, never rejected; and the human tables print whole
ids at any terminal width, so an id can be copied from them into the next command."""

from __future__ import annotations

import json

import sqlalchemy as sa
from click.testing import CliRunner

from backfill_assets.cli import cli
from backfill_assets.engine.store import schema
from backfill_assets.examples.orders.domain import ORDER_FACTS
from backfill_assets.service.records import HEADLINE_COUNTS, headline_counts

NARROW = {"COLUMNS": "80"}


def _invoke(*args: str):
    result = CliRunner().invoke(cli, list(args), env=NARROW, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return result.output


def _request_with_a_failed_cell(env) -> str:
    created = json.loads(_invoke("request", "create", "--assets", ORDER_FACTS, "--from", "2022-09-01",
                                 "--to", "2022-09-02", "--reason", "counts", "--json"))
    request_id = created["request_id"]
    # What the driver records when a cell's run failed before its version was judged.
    with env.catalog.engine.begin() as conn:
        conn.execute(sa.update(schema.request_items)
                     .where(schema.request_items.c.request_id == request_id,
                            schema.request_items.c.partition_key == "2022-09-01")
                     .values(decision="failed", reason="run failed: step crashed", run_id="f" * 36))
    return request_id


def test_list_and_show_count_a_failed_cell_as_failed_not_rejected(env):
    request_id = _request_with_a_failed_cell(env)
    shown = json.loads(_invoke("request", "show", request_id, "--json"))
    [listed] = json.loads(_invoke("request", "list", "--json"))
    assert headline_counts(listed["counts"]) == headline_counts(shown["counts"])
    assert (shown["counts"]["failed"], shown["counts"]["rejected"]) == (1, 0)

    table = _invoke("request", "list")
    header = next(line for line in table.splitlines() if "request" in line and "status" in line)
    row = next(line for line in table.splitlines() if request_id in line)
    columns = [c.strip() for c in header.strip("┃│ ").split("┃")]
    values = [c.strip() for c in row.strip("┃│ ").split("│")]
    by_column = dict(zip(columns, values, strict=True))
    assert (by_column["rejected"], by_column["failed"]) == ("0", "1"), table
    assert [c for c in HEADLINE_COUNTS if c != "planned"] == columns[5:]
    assert "failed 1" in _invoke("request", "show", request_id) and "rejected 0" in _invoke(
        "request", "show", request_id)


def test_tables_print_whole_request_and_run_ids_at_80_columns(env):
    request_id = _request_with_a_failed_cell(env)
    listed = _invoke("request", "list")
    assert request_id in listed and "…" not in listed, listed
    shown = _invoke("request", "show", request_id)
    assert "f" * 36 in shown and "…" not in shown, shown
