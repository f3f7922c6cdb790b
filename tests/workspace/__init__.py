"""Tests of capeval.config and capeval.workspace: what users write."""
