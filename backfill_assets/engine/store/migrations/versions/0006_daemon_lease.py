"""One daemon per catalog: the daemon's lease (engine/store/daemon_lease.py) and each request's driver tick token
(engine/store/ledger.py).

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

_ts = sa.String(40)


def upgrade() -> None:
    op.create_table(
        "daemon_lease",
        sa.Column("name", sa.String(64), primary_key=True),
        sa.Column("holder", sa.String(64), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("pid_scope", sa.String(255), nullable=False),
        sa.Column("instance", sa.Text, nullable=False),
        sa.Column("acquired_at", _ts, nullable=False),
        sa.Column("renewed_at", _ts, nullable=False),
        sa.Column("expires_at", _ts, nullable=False),
    )
    op.create_table(
        "driver_ticks",
        sa.Column("request_id", sa.String(80), primary_key=True),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("ticked_at", _ts, nullable=False),
    )


def downgrade() -> None:
    # A lease and tick tokens only: dropping them loses no data (a running daemon stops finding its lease).
    op.drop_table("driver_ticks")
    op.drop_table("daemon_lease")
