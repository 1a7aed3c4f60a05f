"""The work: tasks and their leases, schedules and what they fire, the reaper of silent holders,
the calendar feed.
"""
