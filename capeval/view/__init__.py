"""`capeval view`: the results and transcript viewer (docs/viewer.md).

A top layer beside `commands`: it reads nothing itself but what the analysis
layer computes (`capeval.analysis.frame.load_frame`, the history views, the
gate's comparison), each repeat's artifacts through the core's run-summary
reader, and the Paperclip suite run in process. `model` turns those into the
pages' data, `page` assembles the one self-contained HTML file, `server`
serves both on loopback and `export` writes them as static files.
"""
