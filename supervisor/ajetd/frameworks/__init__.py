"""What is specific to one training framework (AgentJet, NeMo-RL): config review, the overrides
a run needs, and where and how each prints its validation results. Pure.

Imports `ajetd.core` (the records a framework's reader fills); the core's decisions use it in
turn (one layer, no module cycles).

Layers, bottom up: core, frameworks < diagnosis < views < adapters < pictures < hosts <
daemon < cli. A module imports its own layer and the layers below it (tests/test_layers.py).
"""
