"""Which code location owns an asset name on a catalog.

Two code locations sharing one Dagster instance and one catalog may both declare ``daily_usage``: the catalog is
keyed by the asset name, so the second location's versions would supersede the first's days and each location's
readers would see the other's data. The first attempt a location begins claims the name, inside the transaction
that registers the attempt; another location is refused there, before anything is written.
"""

from __future__ import annotations

from collections.abc import Iterable

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from backfill_assets.engine.model.errors import AssetOwnedElsewhere
from backfill_assets.engine.store.schema import asset_owners
from backfill_assets.engine.store.transactions import begin


def claim_asset(engine: Engine, asset: str, location: str, now: str) -> None:
    """Claim ``asset`` for ``location``, or raise ``AssetOwnedElsewhere``; called before an attempt is registered,
    so a refused location writes nothing. An empty location (a caller that does not know its code location) claims
    nothing and is refused by no one."""
    if not location:
        return
    owner = owners_of(engine, [asset]).get(asset)
    if owner is None:
        try:
            with begin(engine) as conn:
                conn.execute(asset_owners.insert().values(asset=asset, location=location, claimed_at=now))
            return
        except sa.exc.IntegrityError:  # another process claimed it first: whose is it?
            owner = owners_of(engine, [asset]).get(asset)
    if owner != location:
        raise AssetOwnedElsewhere(asset, str(owner), location)


def owners_of(engine: Engine, assets: Iterable[str]) -> dict[str, str]:
    """The owning location of each of ``assets`` that has one."""
    names = list(assets)
    with engine.connect() as conn:
        rows = conn.execute(
            sa.select(asset_owners.c.asset, asset_owners.c.location).where(asset_owners.c.asset.in_(names))
        ).all()
    return {r.asset: r.location for r in rows}


def refuse_foreign(engine: Engine, assets: Iterable[str], location: str) -> None:
    """Refuse, before anything is written, assets another code location owns."""
    if not location:
        return
    for asset, owner in sorted(owners_of(engine, assets).items()):
        if owner != location:
            raise AssetOwnedElsewhere(asset, owner, location)
