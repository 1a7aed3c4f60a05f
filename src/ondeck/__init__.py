"""ondeck: the memory server that tells each session what is on deck today."""

__version__ = "0.2.0"

# No imports here: every `ondeck …` process imports this package first, the session hooks
# too (see core/logs.py for where the loggers' NullHandler went).
