"""Attempt or new run, decided from what the re-executed runs computed (no Dagster, no database)."""

from __future__ import annotations

from dataclasses import dataclass

from backfill_assets.engine.model.logical_run import logical_run_of


@dataclass(frozen=True)
class Computed:
    logical_run_id: str
    code_version: str
    params_digest: str


def test_a_first_run_is_its_own_logical_run():
    chosen = logical_run_of("r1", None, [], "v1", "p1")
    assert (chosen.logical_run_id, chosen.changed_computation) == ("r1", False)


def test_the_same_computation_is_another_attempt_of_the_run_that_computed_it():
    chain = [Computed("root", "v1", "p1"), Computed("r2", "v1", "p2")]
    assert logical_run_of("r3", "root", chain, "v1", "p1").logical_run_id == "root"
    # Matching the later re-execution that had started a run of its own: another attempt of that run.
    assert logical_run_of("r3", "root", chain, "v1", "p2").logical_run_id == "r2"


def test_changed_params_or_code_is_a_new_run_saying_what_changed():
    chain = [Computed("root", "v1", "p1")]
    params = logical_run_of("r2", "root", chain, "v1", "p9")
    assert (params.logical_run_id, params.changed_computation) == ("r2", True)
    assert "params digest p1 → p9" in params.reason and "code version" not in params.reason
    code = logical_run_of("r2", "root", chain, "v2", "p1")
    assert code.logical_run_id == "r2" and "code version v1 → v2" in code.reason


def test_a_chain_that_never_computed_the_asset_keeps_the_root_run():
    chosen = logical_run_of("r2", "root", [], "v2", "p9")
    assert (chosen.logical_run_id, chosen.changed_computation) == ("root", False)
