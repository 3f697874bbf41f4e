"""The resource a sensor resolves once leaves Dagster's current instance state as it found it.

Entering a ``DagsterInstance`` sets Dagster's defs-state storage (a context variable) and leaving it restores the
previous one. A resource resolved with an instance left entered until garbage collection restores, at that
moment, the storage of an instance that may be gone: the next definitions load then fails on a dead weakref, in
whichever test or process happens to collect. This drives that order with real instances and an explicit collect.
"""

from __future__ import annotations

import gc

import dagster as dg

from backfill_assets.integration.sensors.evaluation import SensorResource


@dg.asset
def one_asset() -> int:
    return 1


def test_a_resolved_sensor_resource_collected_later_leaves_definitions_loadable(tmp_path):
    with dg.instance_for_test(temp_dir=str(_folder(tmp_path, "first"))) as first:
        resource = SensorResource(None)
        resource.get()
    del first
    gc.collect()
    with dg.instance_for_test(temp_dir=str(_folder(tmp_path, "second"))):
        del resource
        gc.collect()
        repository = dg.Definitions(assets=[one_asset]).get_repository_def()
    assert [key.to_user_string() for key in repository.asset_graph.get_all_asset_keys()] == ["one_asset"]


def _folder(parent, name: str):
    folder = parent / name
    folder.mkdir()
    return folder
