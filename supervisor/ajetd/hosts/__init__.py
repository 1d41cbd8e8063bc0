"""Where a trial runs: this machine, an SSH host, Slurm (interactive or batch), an AgentJet swarm
server. Each place is one implementation of the daemon's `Host` interface plus its pane program;
`preflight` checks a blueprint against the place it will run.

May import `ajetd.core`, `ajetd.frameworks`, `ajetd.diagnosis`, `ajetd.views`,
`ajetd.adapters`, `ajetd.pictures`; never the daemon.

Layers, bottom up: frameworks < core < diagnosis < views < adapters < pictures < hosts <
daemon < cli. A module imports its own folder and the folders below it (tests/test_layers.py).
"""
