"""A process that loads a code location has ``sqlalchemy.orm`` whole before any of its threads runs a query
(``engine/store/orm_import.py``, called by ``backfill_definitions``): a code server evaluates sensors on several
threads, and the first published-table sync imports the ORM lazily (through pyiceberg) on one of them while another
builds a query."""

from __future__ import annotations

import subprocess
import sys

LOADED = (
    "import sys; import backfill_assets.examples.orders.definitions; "
    "print('sqlalchemy.orm' in sys.modules, 'pyiceberg' in sys.modules)"
)


def test_loading_a_code_location_imports_the_orm_whole_before_any_thread_and_no_table_library():
    out = subprocess.run([sys.executable, "-c", LOADED], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.split() == ["True", "False"]  # the ORM imported whole; the tables' library still lazy
