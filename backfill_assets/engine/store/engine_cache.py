"""One SQLAlchemy engine per URL per process, made on first use and kept: the catalog's (``db``), the PostgreSQL
tables' (``pg_tables``) and the Iceberg catalog reader's (``iceberg_catalog_rows``)."""

from __future__ import annotations

import threading
from typing import Callable

from sqlalchemy.engine import Engine


class EngineCache:
    def __init__(self) -> None:
        self._engines: dict[str, Engine] = {}
        self._lock = threading.Lock()

    def get(self, url: str, make: Callable[[], Engine]) -> Engine:
        """The engine kept for ``url``, or the one ``make`` returns, kept (one that raises keeps nothing)."""
        with self._lock:
            engine = self._engines.get(url)
            if engine is None:
                engine = self._engines[url] = make()
            return engine

    def dispose_all(self) -> None:
        """Close every kept engine's pooled connections and forget them."""
        with self._lock:
            for engine in self._engines.values():
                engine.dispose()
            self._engines.clear()
