"""The agent hooks (`ondeck hook VERB`): the payload read, the event delivered to the server, the
database or the spool, the settings hooks installed.
"""
