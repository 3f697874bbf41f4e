"""Access: who the system saw act, stored beside the names people state — ``system_user`` on requests (beside
requested_by / approved_by), overrides (beside decided_by) and handoffs (beside decided_by). Nullable: rows written
before this revision saw nobody, and read back as such.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

TABLES = ("requests", "overrides", "handoffs")
COLUMN = "system_user"


def upgrade() -> None:
    for table in TABLES:
        op.add_column(table, sa.Column(COLUMN, sa.String(120), nullable=True))


def downgrade() -> None:
    for table in TABLES:
        with op.batch_alter_table(table) as batch:  # SQLite drops a column by rebuilding the table
            batch.drop_column(COLUMN)
