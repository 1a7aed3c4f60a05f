"""ondeck: the memory server that tells each session what is on deck today."""

import logging

__version__ = "0.1.0"

# Log records reach stderr only where a process set that up (`ondeck serve`, `ondeck jobs`:
# core/logs.py). Without this, Python's last-resort handler would print every warning a
# service logs under a CLI command's own one-line report of it: the same failure twice.
logging.getLogger(__name__).addHandler(logging.NullHandler())
