"""Order in the definition: the order an asset's days may run in and whether they may run in parallel, declared
with the asset (``gated_asset(order=..., parallel_days=...)``), and a request's order and pace resolved from it.

A ``depends_on_past`` asset is implicitly forward and serial: each day reads the one before it. An operator may
leave order and ``max_active`` out (the request takes what its assets declare) or repeat them; a choice that
contradicts a declaration is refused naming the asset, never quietly overridden.

A request spanning assets with different declarations: the strictest wins — serial over parallel, a fixed order
over ``any`` — because the strict asset's promise holds only if the whole request keeps it, and the lax one loses
nothing that it declared. Assets fixing opposite orders (one forward-only, one backward-only) cannot share a
request: no order keeps both promises, so the request is refused naming both.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Iterable

from backfill_assets.engine.model.errors import InvalidInput, RefusedField
from backfill_assets.engine.model.graph import AssetGraph, DeclaredAsset

# Runs of one request at once when neither the operator nor a serial asset says otherwise.
DEFAULT_MAX_ACTIVE = 2


class DayOrder(StrEnum):
    """The order an asset's days may run in within one request."""

    ANY = "any"  # the operator chooses (forward by default)
    FORWARD = "forward"  # oldest day first only
    BACKWARD = "backward"  # newest day first only (e.g. the newest days matter most to readers)


def day_order(value: object, asset: str) -> DayOrder:
    """``gated_asset(order=...)`` checked: a DayOrder or its value."""
    try:
        if isinstance(value, str):  # a member is one too
            return DayOrder(value)
    except ValueError:
        pass
    raise InvalidInput(f"{asset}: order={value!r} is not one of {', '.join(DayOrder)}") from None


def declared_order(spec: DeclaredAsset) -> DayOrder:
    """The order the asset allows: a depends-on-past asset runs forward whatever it declares."""
    return DayOrder.FORWARD if spec.depends_on_past else DayOrder(spec.order)


def runs_serially(spec: DeclaredAsset) -> bool:
    """One active interval at a time: declared ``parallel_days=False``, or depends on the past."""
    return spec.depends_on_past or not spec.parallel_days


def why_serial(spec: DeclaredAsset) -> str:
    return "depends on the past" if spec.depends_on_past else "declares parallel_days=False"


def why_order(spec: DeclaredAsset) -> str:
    return "depends on the past" if spec.depends_on_past else f"declares order={declared_order(spec).value}"


@dataclass(frozen=True)
class DeclaredPace:
    """What a request's assets declare together (strictest wins): the one order they allow (None: any), the assets
    that fix it, and the assets that run one interval at a time."""

    order: DayOrder | None
    order_set_by: tuple[str, ...]
    serial: tuple[str, ...]

    @property
    def default_max_active(self) -> int:
        return 1 if self.serial else DEFAULT_MAX_ACTIVE


def declared_pace(graph: AssetGraph, assets: Iterable[str], refuse_conflict: bool = True) -> DeclaredPace:
    """The order and pace ``assets`` allow together; RefusedField when they fix opposite orders, or with
    ``refuse_conflict`` False (a request the library makes itself, e.g. a rollback's cascade) no order (forward)."""
    specs = [graph[a] for a in assets]
    fixed = {s.name: declared_order(s) for s in specs if declared_order(s) != DayOrder.ANY}
    orders = sorted(set(fixed.values()))
    if len(orders) > 1 and not refuse_conflict:
        orders = []
    if len(orders) > 1:
        forward = [a for a, o in fixed.items() if o == DayOrder.FORWARD]
        backward = [a for a, o in fixed.items() if o == DayOrder.BACKWARD]
        raise RefusedField(
            "{assets} cannot run in one request: {forward} run(s) forward only and {backward} backward only; "
            "ask for them in separate requests", forward=", ".join(forward), backward=", ".join(backward),
        )
    return DeclaredPace(
        order=orders[0] if orders else None,
        order_set_by=tuple(fixed),
        serial=tuple(s.name for s in specs if runs_serially(s)),
    )


def resolve_order(graph: AssetGraph, pace: DeclaredPace, asked: str | None) -> str:
    """The request's order: what the operator asked, checked against the declarations, else the declared one,
    else forward. ``asked`` is a valid ``Order`` value or None."""
    if asked is None:
        return (pace.order or DayOrder.FORWARD).value
    if pace.order is not None and asked != pace.order.value:
        reasons = "; ".join(f"{a} {why_order(graph[a])}" for a in pace.order_set_by)
        raise RefusedField(
            "{order} {value} is refused: {reasons}, so the request runs {declared}; leave the order out to use it",
            value=asked, reasons=reasons, declared=pace.order.value,
        )
    return asked


def resolve_max_active(graph: AssetGraph, pace: DeclaredPace, asked: int | None) -> int:
    """The request's max_active: the operator's (checked elsewhere to be 1..limit), refused above 1 when an asset
    runs one interval at a time, else 1 for such a request and DEFAULT_MAX_ACTIVE otherwise."""
    if asked is None:
        return pace.default_max_active
    if asked > 1 and pace.serial:
        reasons = "; ".join(f"{a} {why_serial(graph[a])}" for a in pace.serial)
        raise RefusedField(
            "{max_active} {value} is refused: {reasons}, so its days run one at a time; leave it out or give 1",
            value=asked, reasons=reasons,
        )
    return asked
