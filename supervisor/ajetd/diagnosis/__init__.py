"""Reading output for failures: the catalogue of kinds (data), the shape of a log line, matching,
scanning files in bounded chunks, live scans of running trials, user-defined kinds.

Imports `ajetd.core`; only `scan` and `live` read files.
"""
