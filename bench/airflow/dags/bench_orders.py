"""A, Airflow 3: the benchmark's three assets as one DAG, @daily in Asia/Shanghai, one task per asset.

Each task computes its asset for the run's data interval with the same code as the other contenders
(``bench.plain``), overwriting that day's Parquet file. Settings come from the environment the scheduler was
started with: ``BENCH_OUT_DIR``, ``BACKFILL_SOURCE_URL``; ``PYTHONPATH`` makes the repository importable.
"""

import os
from pathlib import Path

import pendulum
from airflow.sdk import dag, task
from airflow.timetables.interval import CronDataIntervalTimetable

DAG_ID = "bench_orders"
TIMEZONE = "Asia/Shanghai"


def run_asset(asset: str, data_interval_start, data_interval_end) -> None:
    from backfill_assets.examples.orders.source import SourceSystem
    from bench.plain import CALENDAR, run_asset_day

    key = CALENDAR.key_of(data_interval_start)
    interval = CALENDAR.interval(key)
    # Airflow's interval must be exactly the project's business day (Shanghai midnight to midnight).
    if (interval.start_utc.timestamp(), interval.end_utc.timestamp()) != (
        data_interval_start.timestamp(),
        data_interval_end.timestamp(),
    ):
        raise ValueError(f"data interval {data_interval_start}..{data_interval_end} is not business day {key}")
    source = SourceSystem(os.environ["BACKFILL_SOURCE_URL"])
    run_asset_day(Path(os.environ["BENCH_OUT_DIR"]), source, asset, key)


@dag(
    dag_id=DAG_ID,
    # @daily with data intervals [midnight, next midnight) in Shanghai. Airflow 3's plain "@daily" is a
    # CronTriggerTimetable whose data interval is empty (start == end), which no transform can read by.
    schedule=CronDataIntervalTimetable("@daily", timezone=TIMEZONE),
    start_date=pendulum.datetime(2022, 9, 1, tz=TIMEZONE),
    catchup=False,
    tags=["bench"],
)
def bench_orders():
    @task
    def raw_orders(data_interval_start=None, data_interval_end=None):
        run_asset("raw_orders", data_interval_start, data_interval_end)

    @task
    def order_facts(data_interval_start=None, data_interval_end=None):
        run_asset("order_facts", data_interval_start, data_interval_end)

    @task
    def daily_revenue(data_interval_start=None, data_interval_end=None):
        run_asset("daily_revenue", data_interval_start, data_interval_end)

    raw_orders() >> order_facts() >> daily_revenue()


bench_orders()
