"""Write-target quotas: the slots taken of each target's write limit, and the steps waiting for one
(engine/store/target_slots.py).

Revision ID: 0004
Revises: 0003
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_ts = sa.String(40)


def upgrade() -> None:
    op.create_table(
        "target_slots",
        sa.Column("target", sa.String(64), primary_key=True),
        sa.Column("slot", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("holder", sa.String(64), nullable=False),
        sa.Column("priority", sa.Integer, nullable=False),
        sa.Column("dagster_run_id", sa.String(64)),
        sa.Column("asset", sa.String(64)),
        sa.Column("partition_key", sa.String(64)),
        sa.Column("acquired_at", _ts, nullable=False),
        sa.Column("expires_at", _ts, nullable=False),
    )
    op.create_table(
        "target_slot_waiters",
        sa.Column("target", sa.String(64), primary_key=True),
        sa.Column("holder", sa.String(64), primary_key=True),
        sa.Column("priority", sa.Integer, nullable=False),
        sa.Column("since", _ts, nullable=False),
        sa.Column("expires_at", _ts, nullable=False),
    )


def downgrade() -> None:
    # Only leases and waiters live here: dropping them loses no data (a step holding a slot finishes unaffected).
    op.drop_table("target_slot_waiters")
    op.drop_table("target_slots")
