"""Tests of docs/ and the README: a strict site build, every command and option documented."""
