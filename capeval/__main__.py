"""`python -m capeval`: the console script, where no script is installed."""

from capeval.launch import entry

entry()
