"""Tests of the project itself: lint, types, layers, packaging, benchmarks."""
