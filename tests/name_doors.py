"""Every CLI door that takes a person's name, for the tests that put a bad name through each of them."""

from __future__ import annotations

from backfill_assets.examples.orders.domain import DAILY_REVENUE, ORDER_FACTS, REVENUE_ALERT

NAME = "<name>"  # where the name under test goes


def cli_name_doors(day: str, rejected_version: str, request_id: str, handoff_id: str) -> list[tuple[list[str], str]]:
    """(arguments with NAME where the name goes, the option the one-line refusal must name)."""
    return [
        (["request", "create", "--assets", DAILY_REVENUE, "--from", day, "--to", day, "--requested-by", NAME],
         "--requested-by"),
        (["request", "create", "--assets", REVENUE_ALERT, "--from", day, "--to", day, "--allow-side-effects",
          REVENUE_ALERT, "--approved-by", NAME], "--approved-by"),
        (["accept", rejected_version, "--approved-by", NAME, "--reason", "fine"], "--approved-by"),
        (["reject", DAILY_REVENUE, day, "--by", NAME, "--reason", "bad"], "--by"),
        # The name is checked before the file is read: no file is needed to be refused.
        (["register", DAILY_REVENUE, day, "--path", "fixed.parquet", "--approved-by", NAME, "--reason", "fixed"],
         "--approved-by"),
        (["rollback", DAILY_REVENUE, day, "--by", NAME, "--reason", "bad"], "--by"),
        (["skip", ORDER_FACTS, day, "--by", NAME, "--reason", "not needed"], "--by"),
        (["request", "pause", request_id, "--by", NAME], "--by"),
        (["handoff", "accept", handoff_id, "--by", NAME], "--by"),
    ]


def with_name(args: list[str], name: str) -> list[str]:
    return [name if a == NAME else a for a in args]
