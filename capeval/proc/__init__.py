"""Child processes that can always be stopped, below both the agents and the runner."""
