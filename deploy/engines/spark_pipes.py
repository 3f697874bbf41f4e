"""A gated asset whose compute is a Spark application, started with ``spark-submit`` through
``dg.PipesSubprocessClient`` (deploy/engines/README.md).

On paper: it needs Spark (``spark-submit`` on the PATH, ``pyspark`` and ``dagster-pipes`` for the driver script,
spark_job.py) and the warehouse on storage the cluster reaches (``BACKFILL_WAREHOUSE=s3://…``). The driver runs in
client mode on the step's host, so Pipes' default temp-file channel reaches it.

The application is named after the version (``spark.app.name``) and carries every label as ``spark.backfill.*``
conf (its Environment tab and event log say which version it computed); on Kubernetes its driver and executor pods
get the label-safe labels too. The driver reports ``sparkContext.applicationId`` as its engine id:
``backfill-assets trace application_1718000000000_0042`` finds the version.
"""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import pandas as pd

from backfill_assets import BusinessCalendar, RunContext, backfill_definitions, gated_asset, run_external, unique_key

calendar = BusinessCalendar("Europe/Berlin", "2024-01-01")
DRIVER = Path(__file__).with_name("spark_job.py")


def spark_submit(run: RunContext, driver: Path = DRIVER, on_kubernetes: bool = False) -> list[str]:
    """The ``spark-submit`` command line: the run's Spark conf (and, on Kubernetes, its pod labels) as --conf."""
    conf = dict(run.spark_conf)
    if on_kubernetes:
        for key, value in run.k8s_labels.items():
            conf[f"spark.kubernetes.driver.label.{key}"] = value
            conf[f"spark.kubernetes.executor.label.{key}"] = value
    return ["spark-submit", "--deploy-mode", "client",
            *[arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}")], str(driver)]


@gated_asset(calendar=calendar, audits=[unique_key("meter_id", "hour")])
def meter_readings(run: RunContext, pipes_subprocess_client: dg.PipesSubprocessClient) -> pd.DataFrame:
    """Hourly meter readings, computed by a Spark application writing into the version's own location."""
    # Spark writes part-*.parquet files (and _SUCCESS) into engine_location; run_external reads the *.parquet ones.
    return run_external(run, pipes_subprocess_client, engine="spark_application", command=spark_submit(run))


def definitions() -> dg.Definitions:
    return backfill_definitions(assets=[meter_readings],
                                resources={"pipes_subprocess_client": dg.PipesSubprocessClient()})
