"""The version life cycle (docs/ARCHITECTURE.md#life-cycle): exactly the transitions in ``ALLOWED`` are legal."""

from __future__ import annotations

import itertools

import pytest

from backfill_assets.engine.model.errors import IllegalTransition
from backfill_assets.engine.model.states import (
    ALLOWED,
    IN_PROGRESS,
    OVERRIDE_ALLOWED,
    VERIFIED,
    VersionState,
    check_transition,
)

S = VersionState
ALL_PAIRS = list(itertools.product(VersionState, VersionState))
LEGAL = [(a, b) for a, b in ALL_PAIRS if b in ALLOWED[a]]
ILLEGAL = [(a, b) for a, b in ALL_PAIRS if b not in ALLOWED[a]]


def _id(pair):
    return f"{pair[0].value}->{pair[1].value}"


def test_every_state_has_an_entry_in_the_table():
    assert set(ALLOWED) == set(VersionState)


# The life cycle as docs/ARCHITECTURE.md#life-cycle draws it, written out independently of ALLOWED so that an
# accidental edit of the table (an extra edge or a missing one) fails here.
DESIGN_EDGES = {
    (S.WRITING, S.VERIFYING),
    (S.WRITING, S.ABANDONED),
    (S.VERIFYING, S.PUBLISHED),
    (S.VERIFYING, S.REJECTED),
    (S.VERIFYING, S.ABANDONED),  # a run dying during its checks is abandoned by reconcile
    (S.PUBLISHED, S.SUPERSEDED),
    (S.PUBLISHED, S.ROLLED_BACK),
    (S.SUPERSEDED, S.PUBLISHED),  # rollback re-publishes a verified version
    (S.ROLLED_BACK, S.PUBLISHED),
    (S.SUPERSEDED, S.PURGED),
    (S.ROLLED_BACK, S.PURGED),
    (S.REJECTED, S.PURGED),
    (S.ABANDONED, S.PURGED),
}


def test_allowed_table_is_exactly_the_designed_life_cycle():
    assert set(LEGAL) == DESIGN_EDGES


@pytest.mark.parametrize("pair", LEGAL, ids=_id)
def test_legal_transitions_pass(pair):
    current, target = pair
    assert check_transition("v", current, target) is None
    assert check_transition("v", current.value, target.value) is None  # plain strings from the catalog too


@pytest.mark.parametrize("pair", ILLEGAL, ids=_id)
def test_illegal_transitions_raise(pair):
    current, target = pair
    with pytest.raises(IllegalTransition):
        check_transition("v", current, target)
    with pytest.raises(IllegalTransition):
        check_transition("v", current.value, target.value)


@pytest.mark.parametrize(
    "current, target",
    [
        (S.REJECTED, S.PUBLISHED),  # a failed check can never be published
        (S.WRITING, S.PUBLISHED),  # nothing skips verification
        (S.ABANDONED, S.PUBLISHED),
        (S.ABANDONED, S.VERIFYING),
        (S.REJECTED, S.VERIFYING),
        (S.PUBLISHED, S.PUBLISHED),
        (S.PUBLISHED, S.PURGED),  # the current version is never purged
        (S.WRITING, S.PURGED),
        (S.VERIFYING, S.PURGED),
        (S.PUBLISHED, S.WRITING),
    ],
    ids=lambda v: v.value,
)
def test_notable_illegal_transitions(current, target):
    with pytest.raises(IllegalTransition, match=f"{current.value} -> {target.value}"):
        check_transition("raw_orders/2022-10-01/run-1/1", current, target)


@pytest.mark.parametrize("target", list(VersionState), ids=lambda s: s.value)
def test_purged_is_final(target):
    with pytest.raises(IllegalTransition):
        check_transition("v", S.PURGED, target)


def test_error_message_names_the_version():
    with pytest.raises(IllegalTransition, match="order_facts/2022-10-01/run-9/2"):
        check_transition("order_facts/2022-10-01/run-9/2", S.REJECTED, S.PUBLISHED)


def test_rollback_targets_are_the_verified_states_only():
    assert VERIFIED == {S.PUBLISHED, S.SUPERSEDED, S.ROLLED_BACK}
    assert not VERIFIED & IN_PROGRESS


def test_unknown_state_is_not_silently_accepted():
    with pytest.raises(ValueError):
        check_transition("v", "DONE", S.PUBLISHED)


# ---- an operator's override (backfill-assets accept / reject) ----------------------------------------------------

OVERRIDE_EDGES = {
    (S.REJECTED, S.PUBLISHED),  # accept: a person checked the data (or the check was wrong)
    (S.PUBLISHED, S.REJECTED),  # reject: a published version found bad after the fact
}


def test_override_edges_are_exactly_accept_and_reject_and_none_is_in_the_life_cycle():
    assert {(a, b) for a, targets in OVERRIDE_ALLOWED.items() for b in targets} == OVERRIDE_EDGES
    assert not OVERRIDE_EDGES & DESIGN_EDGES


@pytest.mark.parametrize("pair", sorted(OVERRIDE_EDGES), ids=_id)
def test_an_override_edge_is_refused_without_the_override_and_allowed_with_it(pair):
    current, target = pair
    with pytest.raises(IllegalTransition):
        check_transition("v", current, target)
    assert check_transition("v", current, target, override=True) is None


@pytest.mark.parametrize("pair", [p for p in ILLEGAL if p not in OVERRIDE_EDGES], ids=_id)
def test_the_override_opens_no_other_edge(pair):
    current, target = pair
    with pytest.raises(IllegalTransition):
        check_transition("v", current, target, override=True)


@pytest.mark.parametrize("pair", LEGAL, ids=_id)
def test_the_override_closes_no_edge_of_the_life_cycle(pair):
    assert check_transition("v", *pair, override=True) is None
