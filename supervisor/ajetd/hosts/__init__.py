"""Where a trial runs: this machine, an SSH host, Slurm (interactive or batch), an AgentJet swarm
server. Each place is one implementation of the daemon's `Host` interface plus its pane program.

May import `ajetd.core`, `ajetd.frameworks`, `ajetd.diagnosis`, `ajetd.adapters`.
"""
