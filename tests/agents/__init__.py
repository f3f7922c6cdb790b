"""Tests of capeval.agents."""
