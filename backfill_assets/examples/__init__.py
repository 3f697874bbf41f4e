"""Example code locations built only on the public API (``backfill_assets``); the engine never imports them."""
