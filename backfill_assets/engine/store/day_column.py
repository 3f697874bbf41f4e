"""The name of the day column every data file carries, on its own: the published tables' modules name it without
importing pandas and pyarrow's Parquet reader (``parquet_files``), which ``reconcile`` reading a table's lag never
needs (~0.2 s of a command's start)."""

# The day of the data interval, added to every data file as a date column: what a published table is partitioned
# by (an Iceberg table adds the file itself, placed by this column's bounds). Readers through the library never see
# it (``frame_of_table`` drops it); a frame that already has a column of this name is refused when it is written.
DAY_COLUMN = "partition_date"
