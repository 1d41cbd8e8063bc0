"""Reading output for failures: the catalogue of kinds (data), the shape and text of a log line,
matching (built-in and user kinds), live scans of running trials.

Pure but for `scan` (reading files in bounded chunks, a log's tail) and `live` (diagnosing a
running or ended trial's log); no pure module imports those two. Imports `ajetd.core`,
`ajetd.frameworks` and itself.

Layers, bottom up: core, frameworks < diagnosis < views < adapters < pictures < hosts <
daemon < cli. A module imports its own layer and the layers below it (tests/test_layers.py).
"""
