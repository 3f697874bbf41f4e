"""OpenLineage events for gated assets (docs/LINEAGE.md): off unless ``BackfillResource(openlineage=...)`` or
``BACKFILL_OPENLINEAGE`` turns them on. ``config`` needs nothing installed; ``facets``, ``events`` and ``emitter``
need the ``openlineage`` extra (``openlineage-python``) and are imported only when lineage is on."""
