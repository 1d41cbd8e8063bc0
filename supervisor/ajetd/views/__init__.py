"""What people and programs read: status JSON and text, the run table, one run in full, campaign
views, and the reports (results.md, trials.md, finish.flag). Pure: records in, text out.

Imports `ajetd.core`, `ajetd.frameworks`, `ajetd.diagnosis`; never an adapter, a host or the daemon.
"""
