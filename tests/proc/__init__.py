"""Tests of capeval.proc."""
