"""A stand-in for AgentJet's launcher: same command line, output formats and val file."""
