"""ondeck about itself: the event log, the jobs loop's heartbeat, device tokens, the store's id,
dashboard logins.
"""
