"""Talking to an ondeck server over HTTP: the CLI's API client and the hooks' standard-library
transport (the owner socket or TCP).
"""
