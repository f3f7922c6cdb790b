"""Agent adapters: each launches one agent CLI headlessly and returns an AgentResult."""
