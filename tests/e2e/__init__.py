"""End-to-end tests: the capeval command as a user runs it."""
