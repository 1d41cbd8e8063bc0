"""The pure core: records (runs, trials, findings, GPU samples, campaigns), the blueprint and
its options (user failure kinds included), and the decisions (policy, remedies, stop rules,
placement).

Nothing here does I/O: no files, processes, tmux, NVML, network, threads, logging or clock of
its own (time is passed in). Imports `ajetd.core` and `ajetd.frameworks` only (one layer:
the decisions use what a framework writes; no module cycles).

Layers, bottom up: core, frameworks < diagnosis < views < adapters < pictures < hosts <
daemon < cli. A module imports its own layer and the layers below it (tests/test_layers.py).
"""
