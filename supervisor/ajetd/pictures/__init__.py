"""A run's and a campaign's pictures: what to draw (decided here) and the child processes that
draw them with matplotlib, so that the daemon never imports it.
"""
