"""Tests of the command line (capeval.cli, capeval.commands)."""
