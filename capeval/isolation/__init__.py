"""Sandboxes for agents and graders: `none`, `bwrap` (bubblewrap) and `docker` (docs/isolation.md).

A repeat's agent and its grader each run as one process tree confined by a
`Sandbox` (`capeval.isolation.sandbox`): what it may write (its workdir, its
temp dir, its home), what it may read besides, what it must not see at all
(the workspace, the results, the other repeats), its network, its limits and
an environment built from an allow-list (`capeval.isolation.environment`).
The sandboxing itself is bubblewrap's or Docker's; this package only says
what to bind, mask and limit, and cleans up after the tree.
"""
