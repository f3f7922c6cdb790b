"""The pure core: the case model, behavior metrics, aggregates, verdict rules.

No module here reads or writes a file, starts a process or looks at the clock or
the environment: every rule is a function of its arguments, so it can be read
and tested as a table. Imports only the standard library and other core modules.
"""
