"""Admission follows: the run a step of a Dagster backfill found writing its cell, so the adopted request follows
that run's outcome instead of calling the cell done. Rows recorded before this revision keep NULL (skipped, as
before).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("admissions", sa.Column("followed_run_id", sa.String(64)))


def downgrade() -> None:
    # SQLite drops a column only by copying the table: a batch operation does that (PostgreSQL alters in place).
    with op.batch_alter_table("admissions") as batch:
        batch.drop_column("followed_run_id")
