"""Tests of capeval.paperclip."""
