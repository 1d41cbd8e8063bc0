"""Thin adapters over the outside world on this machine: the home on disk, tmux, processes,
NVML, file watches, the user's hooks and kinds files, git, the inbox, campaign folders, full
disks, the control files.

They decide nothing; they may import `ajetd.core`, `ajetd.frameworks`, `ajetd.diagnosis`,
`ajetd.views` and each other.

Layers, bottom up: core, frameworks < diagnosis < views < adapters < pictures < hosts <
daemon < cli. A module imports its own layer and the layers below it (tests/test_layers.py).
"""
