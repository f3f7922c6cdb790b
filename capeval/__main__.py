"""`python -m capeval`: the console script, where no script is installed."""

from capeval.cli import entry

entry()
