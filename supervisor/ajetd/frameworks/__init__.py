"""What is specific to one training framework (AgentJet, NeMo-RL): config review, the overrides
a run needs, and where and how each prints its validation results. Pure.

Imports nothing of ajetd: the bottom layer, so that the core's decisions can use it.

Layers, bottom up: frameworks < core < diagnosis < views < adapters < pictures < hosts <
daemon < cli. A module imports its own folder and the folders below it (tests/test_layers.py).
"""
