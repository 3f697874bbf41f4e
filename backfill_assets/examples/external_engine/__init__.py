"""The external-engine example: a gated asset whose compute is a separate Python process started through Dagster
Pipes (``dg.PipesSubprocessClient``). The process gets the attempt's identity and isolated location, writes its
Parquet output there, logs through Pipes with the identity and reports its own id; the gate audits and publishes
that output like any other. Its code location is ``backfill_assets.examples.external_engine.definitions``.
"""

MODULE = "backfill_assets.examples.external_engine.definitions"
