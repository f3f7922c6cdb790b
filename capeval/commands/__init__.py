"""One module per CLI command. Import only click and light modules at top level."""
