"""Thin adapters over the outside world on this machine: the home on disk, tmux, processes,
NVML, file watches, the user's hooks, git, the inbox, full disks, the control files.

They decide nothing; they may import `ajetd.core`, `ajetd.frameworks`, `ajetd.diagnosis`,
`ajetd.views` and each other.
"""
