"""A gated asset whose compute runs in a Kubernetes pod through ``PipesK8sClient`` (deploy/engines/README.md).

On paper: it needs ``pip install dagster-k8s`` (not a dependency of backfill_assets) and a cluster. Without the
package this file still imports (its test checks so); ``definitions()`` then says what to install.

The pod carries the attempt's identity as labels (``kubectl get pods -l backfill-assets.io/asset=meter_readings``)
and annotations (the full values), gets the Pipes extras and ``BACKFILL_RUN_*`` variables, writes Parquet into the
version's ``engine_location`` (the warehouse on object storage: every pod reaches it), and reports its pod name —
its ``HOSTNAME`` — as its engine id: ``backfill-assets trace <pod name>`` finds the version.
"""

from __future__ import annotations

from typing import Any

import dagster as dg
import pandas as pd

from backfill_assets import BusinessCalendar, RunContext, backfill_definitions, gated_asset, run_external, unique_key

try:
    from dagster_k8s import PipesK8sClient
except ImportError:  # the optional package: pip install dagster-k8s
    PipesK8sClient = None

calendar = BusinessCalendar("Europe/Berlin", "2024-01-01")
IMAGE = "registry.example.com/meters-job:2024.06"  # an image with dagster-pipes, pandas and the job's script
COMMAND = ["python", "-m", "meters_job"]  # the job reports {"engine": "kubernetes_pod", "engine_id": $HOSTNAME}


def pod_meta(run: RunContext) -> dict[str, Any]:
    """The pod's metadata: the identity as label-safe labels (for selectors) and in full as annotations."""
    return {"labels": run.k8s_labels, "annotations": run.k8s_annotations}


@gated_asset(calendar=calendar, audits=[unique_key("meter_id", "hour")])
def meter_readings(run: RunContext, k8s_pipes_client: dg.PipesClient) -> pd.DataFrame:
    """Hourly meter readings, computed in a pod that writes into the version's own location."""
    return run_external(
        run, k8s_pipes_client, engine="kubernetes_pod", image=IMAGE, command=COMMAND, base_pod_meta=pod_meta(run),
    )


def definitions() -> dg.Definitions:
    if PipesK8sClient is None:
        raise RuntimeError("this code location needs dagster-k8s: pip install 'dagster-k8s>=0.29.21,<0.30'")
    return backfill_definitions(assets=[meter_readings], resources={"k8s_pipes_client": PipesK8sClient()})
