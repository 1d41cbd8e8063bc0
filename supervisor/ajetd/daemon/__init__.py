"""The supervisor loop and its steps: admit, control, launch, observe, act, housekeep, publish.

The only package that ties the others together: it may import every folder but `ajetd.cli`.
The CLI imports `ajetd.daemon.loop` (`Daemon`, `DaemonConfig`) to run the daemon and nothing
else from here.

Layers, bottom up: core, frameworks < diagnosis < views < adapters < pictures < hosts <
daemon < cli. A module imports its own layer and the layers below it (tests/test_layers.py).
"""
