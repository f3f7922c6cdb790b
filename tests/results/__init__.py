"""Tests of capeval.results."""
