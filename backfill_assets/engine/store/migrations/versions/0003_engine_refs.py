"""Engine refs: an external engine's ids (a subprocess, a Kubernetes pod, a Spark application) recorded with the
version it computed, so ``backfill-assets trace`` finds the version from the engine's side.

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "engine_refs",
        sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
        sa.Column("version_id", sa.String(255), nullable=False),
        sa.Column("engine", sa.String(64), nullable=False),
        sa.Column("engine_id", sa.String(255), nullable=False),
        sa.Column("at", sa.String(40), nullable=False),
    )
    op.create_index("ix_engine_refs_engine_id", "engine_refs", ["engine_id"])
    op.create_index("ix_engine_refs_version", "engine_refs", ["version_id"])


def downgrade() -> None:
    op.drop_index("ix_engine_refs_version", table_name="engine_refs")
    op.drop_index("ix_engine_refs_engine_id", table_name="engine_refs")
    op.drop_table("engine_refs")
