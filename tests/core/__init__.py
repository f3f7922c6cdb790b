"""Tests of capeval.core."""
