"""Which code location owns an asset name (engine/store/asset_owners.py).

Revision ID: 0007
Revises: 0006
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Existing versions claim nothing: the first attempt each location begins after the upgrade claims its assets.
    op.create_table(
        "asset_owners",
        sa.Column("asset", sa.String(64), primary_key=True),
        sa.Column("location", sa.String(200), nullable=False),
        sa.Column("claimed_at", sa.String(40), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("asset_owners")
