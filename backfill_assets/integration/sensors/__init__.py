"""Dagster sensors: the backfill driver, propagation, adoption of UI backfills."""

# The minimum interval of the driver, propagation and adoption sensors: Dagster's smallest (an int; 0 means its
# default, 30 s). dagster-daemon passes over sensors every 5 s (1.13); backfill-assets-daemon passes when there is
# new work, and again as soon as a sensor it skipped can tick, until each has ticked since (integration/runs/waker.py).
SENSOR_INTERVAL_SECONDS = 1
