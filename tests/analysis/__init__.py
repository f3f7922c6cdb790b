"""Tests of capeval.analysis."""
