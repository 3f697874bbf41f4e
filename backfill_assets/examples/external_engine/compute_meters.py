"""The external job of the external-engine example, run by Dagster Pipes in its own process.

It needs only ``dagster-pipes`` and pandas (not backfill_assets, not Dagster): the attempt's identity and isolated
location come as the Pipes extras (``backfill_run``) and as ``BACKFILL_RUN_*`` environment variables. It writes its
Parquet output into ``engine_location``, logs through Pipes with the identity, and reports its own id, which is
recorded with the version (``backfill-assets trace <id>`` finds the version from it).
"""

from __future__ import annotations

import json
import os
import socket

import pandas as pd
from dagster_pipes import open_dagster_pipes

METERS = ("m1", "m2", "m3")


def readings(interval: dict, corrupt: bool) -> pd.DataFrame:
    """One reading per meter and hour of the interval (UTC bounds: a DST day has 23 or 25 hours)."""
    hours = pd.date_range(interval["start_utc"], interval["end_utc"], freq="h", inclusive="left")
    frame = pd.DataFrame(
        [{"meter_id": m, "hour": h, "kwh": round(0.25 * (n + 1) + h.hour / 100, 3)}
         for n, m in enumerate(METERS) for h in hours]
    )
    if corrupt:  # the drill: a duplicated reading and a negative one
        frame = pd.concat([frame, frame.head(1)], ignore_index=True)
        frame.loc[0, "kwh"] = -1.0
    return frame


def main() -> None:
    with open_dagster_pipes() as pipes:
        run = pipes.extras["backfill_run"]
        labels = run["labels"]
        # The same identity also arrives in the environment, for programs that do not speak Pipes.
        if os.environ.get("BACKFILL_RUN_VERSION_ID") != labels["version_id"]:
            raise SystemExit("BACKFILL_RUN_VERSION_ID does not name the version of the Pipes extras")
        pipes.log.info(f"external job computing {labels['version_id']} identity={json.dumps(labels, sort_keys=True)}")
        out = run["engine_location"]
        if "://" not in out:
            os.makedirs(out, exist_ok=True)
        frame = readings(run["interval"], bool(pipes.extras.get("corrupt")))
        frame.to_parquet(f"{out}/part-00000.parquet", index=False)
        engine_id = f"{socket.gethostname()}:{os.getpid()}"
        pipes.report_custom_message({"engine": "subprocess", "engine_id": engine_id})
        pipes.log.info(f"external job wrote {len(frame)} rows to {out} as {engine_id}")


if __name__ == "__main__":
    main()
