"""The supervisor loop and its steps: admit, control, launch, observe, act, housekeep, publish.

The only package that ties the others together. The CLI imports `ajetd.daemon.loop` to run the
daemon and nothing else from here.
"""
