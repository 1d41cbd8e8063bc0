"""The pure core: records (runs, trials, findings, GPU samples, campaigns), the blueprint and
its options (user failure kinds included), and the decisions (policy, remedies, stop rules,
placement).

Nothing here does I/O: no files, processes, tmux, NVML, network, threads, logging or clock of
its own (time is passed in). Imports `ajetd.core` and `ajetd.frameworks` only.

Layers, bottom up: frameworks < core < diagnosis < views < adapters < pictures < hosts <
daemon < cli. A module imports its own folder and the folders below it (tests/test_layers.py).
"""
