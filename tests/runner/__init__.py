"""Tests of capeval.runner."""
