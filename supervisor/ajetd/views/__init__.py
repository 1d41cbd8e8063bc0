"""What people and programs read: status JSON and text, the run table, one run in full, campaign
views, and the reports (results.md, trials.md, finish.flag). Pure: records in, text out.

Imports `ajetd.core`, `ajetd.frameworks` and the pure modules of `ajetd.diagnosis`; never an
adapter, a host or the daemon.

Layers, bottom up: core, frameworks < diagnosis < views < adapters < pictures < hosts <
daemon < cli. A module imports its own layer and the layers below it (tests/test_layers.py).
"""
