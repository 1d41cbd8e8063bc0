"""A run's and a campaign's pictures: what to draw (decided here) and the child processes that
draw them with matplotlib, so that the daemon never imports it (matplotlib is imported only
inside the drawing functions, in the child).

May import `ajetd.adapters` and everything below it.

Layers, bottom up: core, frameworks < diagnosis < views < adapters < pictures < hosts <
daemon < cli. A module imports its own layer and the layers below it (tests/test_layers.py).
"""
