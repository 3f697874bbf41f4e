"""Manifest digest: the sha256 of each version's ``_manifest.json`` as written, kept with the version, so a manifest
altered, corrupted or deleted after the write is refused wherever the data file is verified. Versions written
before this revision keep NULL (their data file is verified as before).

Revision ID: 0005
Revises: 0004
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("versions", sa.Column("manifest_sha256", sa.String(64)))


def downgrade() -> None:
    # SQLite drops a column only by copying the table: a batch operation does that (PostgreSQL alters in place).
    with op.batch_alter_table("versions") as batch:
        batch.drop_column("manifest_sha256")
