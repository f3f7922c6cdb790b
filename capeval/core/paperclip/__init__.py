"""Paperclip's policy as data and pure rules: groups, the tool catalog, who may call what.

The control plane, the suite and the live judge all decide by these rules;
none of them does I/O, so the rules are tested as plain functions
(docs/paperclip.md).
"""
