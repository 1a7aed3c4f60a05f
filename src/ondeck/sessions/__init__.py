"""Agent sessions: what a hook brings, the records kept of it, their classification, the spool
that keeps an event the store could not take, lost sessions.
"""
