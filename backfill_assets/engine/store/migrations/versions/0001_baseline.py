"""Baseline: the catalog as it was when its schema was first versioned (engine/store/schema_baseline.py).

From an empty database it creates the baseline's tables; from a catalog made before versions were recorded it adds
what that catalog lacks (tables, nullable columns with their fills, indexes), as those releases did when they
opened it.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

from alembic import op

from backfill_assets.engine.store.schema_baseline import bring_to_baseline

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    bring_to_baseline(op.get_bind())


def downgrade() -> None:
    # Nothing is older than the baseline but an empty database, and a catalog is never emptied by a downgrade.
    raise NotImplementedError("the baseline revision is not downgraded")
