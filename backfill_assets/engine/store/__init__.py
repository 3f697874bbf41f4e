"""The store: every SQL statement of the catalog, ledger, claims, cursors, handoffs, outbox; the warehouse."""
