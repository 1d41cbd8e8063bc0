"""`python -m ajet.launcher` in the fake codebase: the fake launcher under AgentJet's own name,
so a command is written exactly as for the real one (ajetd recognises AgentJet's launcher by
it, e.g. to set a campaign's overrides in a copy of the YAML instead of on the command)."""
