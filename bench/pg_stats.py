"""Which databases kept a shared PostgreSQL server busy: ``pg_stat_database`` counters over a window.

The server's CPU can only be measured whole (``bench/cpu_groups.py``), and on a shared machine other users'
databases are in it. PostgreSQL counts per database the sessions opened and the time spent executing statements
(``active_time``, PostgreSQL 14+), which says how much of the server's work was ours. Counters are flushed by a
backend at most once a second and when it exits, so a window of a minute or more is counted to within a second.
"""

from __future__ import annotations

import sqlalchemy as sa

QUERY = sa.text(
    "SELECT datname, sessions, active_time, xact_commit + xact_rollback AS transactions "
    "FROM pg_stat_database WHERE datname IS NOT NULL"
)
COUNTERS = ("sessions", "active_time", "transactions")


def database_counters(pg_url: str) -> dict[str, dict[str, float]]:
    """Every database's counters now (``active_time`` in milliseconds); empty if the server cannot say."""
    engine = sa.create_engine(pg_url, poolclass=sa.pool.NullPool)
    try:
        with engine.connect() as conn:
            return {r.datname: {c: float(getattr(r, c) or 0) for c in COUNTERS} for r in conn.execute(QUERY)}
    except sa.exc.SQLAlchemyError:
        return {}  # before PostgreSQL 14 (no sessions/active_time), or no right to read the view
    finally:
        engine.dispose()


def activity(before: dict, after: dict, ours: dict[str, str]) -> dict:
    """Our databases' (``ours``: label -> database name) sessions, statement seconds and transactions over the
    window, each and together, against all databases'."""

    def total(names) -> dict:
        sums = {c: sum(after.get(n, {}).get(c, 0.0) - before.get(n, {}).get(c, 0.0) for n in names)
                for c in COUNTERS}
        return {"sessions": int(sums["sessions"]), "active_s": round(sums["active_time"] / 1000, 2),
                "transactions": int(sums["transactions"])}

    mine, everyone = total(ours.values()), total(set(after))
    share = mine["active_s"] / everyone["active_s"] if everyone["active_s"] else None
    return {"ours": mine, "by_database": {label: total([name]) for label, name in ours.items()},
            "all_databases": everyone, "ours_share_of_active": None if share is None else round(share, 3)}
