"""Where a trial runs: this machine, an SSH host, Slurm (interactive or batch), an AgentJet swarm
server. Each place is one implementation of the `Host` interface (`base`) plus its pane
program, and `places` says which a run gets, so the daemon never asks which place it is;
`preflight` checks a blueprint against the place it will run.

May import `ajetd.core`, `ajetd.frameworks`, `ajetd.diagnosis`, `ajetd.views`,
`ajetd.adapters`, `ajetd.pictures`; never the daemon.

Layers, bottom up: core, frameworks < diagnosis < views < adapters < pictures < hosts <
daemon < cli. A module imports its own layer and the layers below it (tests/test_layers.py).
"""
