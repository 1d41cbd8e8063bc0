"""The pure core: records, the blueprint and its options, and the decisions (policy,
remedies, stop rules, placement).

Nothing here does I/O: no processes, no tmux, no NVML, no network, no clock of its own
(time is passed in). Modules here import only `ajetd.core`, `ajetd.frameworks` and the pure
parts of `ajetd.diagnosis`.
"""
