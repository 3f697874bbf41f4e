"""The published tables: each gated asset's published days as a table any engine reads (Iceberg, PostgreSQL),
switched from the catalog's publish log, never ahead of its pointers (docs/READING.md)."""
