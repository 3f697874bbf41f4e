"""The Spark driver of spark_pipes.py (on paper: it needs pyspark and dagster-pipes, not backfill_assets).

It reads the attempt's identity from the Pipes extras, computes the interval, writes Parquet into the version's
``engine_location``, logs through Pipes with the identity and reports the application id as its engine id.
"""

from __future__ import annotations

import json

from dagster_pipes import open_dagster_pipes


def main() -> None:
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    with open_dagster_pipes() as pipes:
        run = pipes.extras["backfill_run"]
        labels, interval = run["labels"], run["interval"]
        spark = SparkSession.builder.getOrCreate()  # named by spark-submit: spark.app.name = the version
        app_id = spark.sparkContext.applicationId
        pipes.report_custom_message({"engine": "spark_application", "engine_id": app_id})
        pipes.log.info(f"{app_id} computing {labels['version_id']} identity={json.dumps(labels, sort_keys=True)}")
        hours = spark.sql(
            f"SELECT explode(sequence(timestamp'{interval['start_utc']}', timestamp'{interval['end_utc']}' "
            "- interval 1 hour, interval 1 hour)) AS hour"
        )
        meters = spark.createDataFrame([("m1",), ("m2",), ("m3",)], ["meter_id"])
        readings = meters.crossJoin(hours).withColumn("kwh", F.lit(0.25))
        readings.coalesce(1).write.mode("errorifexists").parquet(run["engine_location"])
        pipes.log.info(f"{app_id} wrote {labels['version_id']} to {run['engine_location']}")


if __name__ == "__main__":
    main()
