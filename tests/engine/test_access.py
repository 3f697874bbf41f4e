"""The access and cleanup policies (engine/model/access.py), and the checks that use them in the engine: who may
approve side effects and overrides, who may decide a handoff — refused with the names allowed, nothing built."""

from __future__ import annotations

import pytest

from backfill_assets.engine.model.access import OPEN_ACCESS, AccessPolicy, CleanupPolicy
from backfill_assets.engine.model.errors import InvalidInput, NotAuthorized
from backfill_assets.engine.model.graph import AssetGraph, DeclaredAsset
from backfill_assets.engine.model.intervals import BusinessCalendar
from backfill_assets.engine.model.request_input import RequestInput, build_spec

CALENDAR = BusinessCalendar("UTC", "2022-09-01")
POLICY = AccessPolicy(approvers=["ana@example.com", "team:finance"], admins=["olga"])


def graph(access: AccessPolicy | None = None) -> AssetGraph:
    specs = [DeclaredAsset("revenue"), DeclaredAsset("alert", upstream=("revenue",), side_effect=True)]
    return AssetGraph(CALENDAR, specs, access=access)


def side_effect_request(approved_by: str | None) -> RequestInput:
    return RequestInput(assets=["alert"], from_day="2022-09-01", to_day="2022-09-01", allow_side_effects=["alert"],
                        approved_by=approved_by)


def test_without_lists_any_stated_name_approves_and_decides():
    OPEN_ACCESS.require_approver("anyone", "accepting x")
    OPEN_ACCESS.require_decider("anyone", "revenue", (), "handoff ho-1")
    spec = build_spec(graph(), "2022-09-01", side_effect_request("anyone"))
    assert spec.allow_side_effects == ("alert",) and spec.approved_by == "anyone"


def test_an_approver_or_admin_approves_whatever_the_case():
    for name in ("ana@example.com", "ANA@example.com ", "team:finance", "olga"):
        POLICY.require_approver(name, "accepting x")
        assert POLICY.may_approve(name)


def test_a_stranger_is_refused_naming_the_approvers():
    with pytest.raises(NotAuthorized) as refused:
        POLICY.require_approver("mallory", "accepting x")
    assert str(refused.value) == ("'mallory' may not approve accepting x: approvers are ana@example.com, "
                                  "team:finance; admins: olga; nothing changed")
    assert not POLICY.may_approve("mallory") and not POLICY.may_approve(None)


def test_side_effects_approved_by_a_stranger_build_no_spec():
    with pytest.raises(NotAuthorized, match="'mallory' may not approve side effects \\(alert\\)"):
        build_spec(graph(POLICY), "2022-09-01", side_effect_request("mallory"))
    spec = build_spec(graph(POLICY), "2022-09-01", side_effect_request("team:finance"))
    assert spec.approved_by == "team:finance"


def test_only_owners_or_admins_decide_a_handoff():
    owners = ("team:finance", "bo@example.com")
    POLICY.require_decider("Team:Finance", "revenue", owners, "handoff ho-1")
    POLICY.require_decider("olga", "revenue", owners, "handoff ho-1")
    with pytest.raises(NotAuthorized) as refused:
        POLICY.require_decider("ana@example.com", "revenue", owners, "handoff ho-1")
    assert str(refused.value) == ("'ana@example.com' may not decide handoff ho-1: only revenue's owners or an admin "
                                  "may (team:finance, bo@example.com; admins: olga); nothing changed")
    # No owners and no admins: anyone, as before; no owners but admins: the admins only.
    OPEN_ACCESS.require_decider("anyone", "revenue", (), "handoff ho-1")
    with pytest.raises(NotAuthorized, match="only revenue's owners or an admin may \\(none; admins: olga\\)"):
        POLICY.require_decider("anyone", "revenue", (), "handoff ho-1")


@pytest.mark.parametrize("bad, message", [
    (dict(approvers="ana"), "AccessPolicy approvers must be a list of names"),
    (dict(admins=[""]), "AccessPolicy admins entry '' must be 1-120"),
    (dict(approvers=["ana;drop"]), "AccessPolicy approvers entry 'ana;drop' must be 1-120"),
])
def test_a_bad_access_policy_is_refused_when_declared(bad, message):
    with pytest.raises(InvalidInput, match=message):
        AccessPolicy(**bad)


@pytest.mark.parametrize("days", [-1, 1.5, True, "30", 3651])
def test_a_bad_retention_is_refused_when_declared(days):
    with pytest.raises(InvalidInput, match="retention_days must be a whole number of days between 0 and 3650"):
        CleanupPolicy(retention_days=days)


def test_the_graph_carries_the_policies_with_open_defaults():
    assert graph().access == OPEN_ACCESS and graph().cleanup == CleanupPolicy(30)
    assert AssetGraph(CALENDAR, [DeclaredAsset("revenue")], cleanup=CleanupPolicy(0)).cleanup.retention_days == 0
