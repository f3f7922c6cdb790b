"""The runner: matrix x cases x repeats, one row per repeat. Never imports polars/DuckDB/scipy/matplotlib."""
