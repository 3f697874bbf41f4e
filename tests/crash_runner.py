"""Runs one partition in-process in a child process, so a BACKFILL_FAULT crash point kills only the child."""

import json
import sys
import warnings

import dagster as dg

from tests.orders import run_partitions


def main() -> None:
    warnings.simplefilter("ignore")
    args = json.loads(sys.argv[1])
    run_partitions(
        dg.DagsterInstance.get(),
        [args["partition"]],
        assets=args["assets"],
        tags=args["tags"],
        run_config_for={args["partition"]: args.get("run_config", {})},
    )


if __name__ == "__main__":
    main()
