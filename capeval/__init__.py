"""capeval: capability evals of coding agents.

The package is split into a pure core (cases, turn streams, behavior metrics,
aggregates, verdicts, Paperclip policy) and a thin shell (runner, agent
adapters, CLI, file formats). The runner path never imports polars, DuckDB,
scipy or matplotlib; the analysis layer never imports agent code.
"""

__version__ = "0.1.0"
