"""The `ajetd` command line. Reads the daemon's home directly and talks to the daemon only by files.

The top layer: it may import every folder, but of `ajetd.daemon` only `Daemon` and
`DaemonConfig` from `ajetd.daemon.loop` (for `ajetd daemon`). Imports stay lazy so that
`ajetd submit` starts fast.

Layers, bottom up: core, frameworks < diagnosis < views < adapters < pictures < hosts <
daemon < cli. A module imports its own layer and the layers below it (tests/test_layers.py).
"""
