"""The `ajetd` command line. Reads the daemon's home directly and talks to the daemon only by files.

Imports stay lazy so that `ajetd submit` starts fast; the daemon's internals are not imported
(only `ajetd.daemon.loop` by `ajetd daemon`).
"""
