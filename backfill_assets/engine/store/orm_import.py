"""SQLAlchemy's ORM imported whole, before a process's threads run queries.

pyiceberg's SQL catalog imports ``sqlalchemy.orm`` the first time a published table is synced, which in a code
server is on one of the threads evaluating sensors, and in a step beside the thread renewing its write-slot leases.
SQLAlchemy registers the ORM's inspection hook before that import has finished, so a query built on another thread
at that moment failed with "partially initialized module 'sqlalchemy.orm.exc'". A process that loads a code
location imports it first, on the thread that loads it (about 0.05 s)."""

from __future__ import annotations


def import_the_orm_whole() -> None:
    import sqlalchemy.orm  # noqa: F401
