"""What is specific to one training framework (AgentJet, NeMo-RL): config review, the overrides
a run needs, and where and how each prints its validation results. Pure.

Imports only `ajetd.core`.
"""
