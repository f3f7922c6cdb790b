"""capeval's tests, one folder per package layer (see docs/development.md)."""
