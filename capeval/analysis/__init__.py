"""The analysis layer: polars frames and DuckDB SQL over result rows. Never imports runner or agent code."""
