"""Alembic's environment for the catalog: run by ``schema_version`` on a connection it has opened, locked and begun
(``config.attributes["connection"]``), so a whole upgrade is one transaction of the caller's.

A developer adding a revision (docs/OPERATIONS.md, "Upgrading the catalog") runs alembic against a scratch
catalog: ``alembic -x url=sqlite:///scratch.db -c backfill_assets/engine/store/migrations/alembic.ini revision
--autogenerate -m "what changes"``; then this file opens its own connection from ``-x url=``.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import context

from backfill_assets.engine.store.schema import metadata
from backfill_assets.engine.store.schema_version import VERSION_TABLE


def _run(connection: sa.Connection) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        version_table=VERSION_TABLE,
        # SQLite alters most things only by copying the table: autogenerate writes batch operations for it.
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is not None:
    _run(connection)
else:
    engine = sa.create_engine(context.get_x_argument(as_dictionary=True)["url"])
    with engine.begin() as own:
        _run(own)
    engine.dispose()
