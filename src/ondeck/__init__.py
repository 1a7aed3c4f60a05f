"""ondeck: the memory server that tells each session what is on deck today."""

__version__ = "0.1.0"
