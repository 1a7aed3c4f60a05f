"""Backups: runs, the copies and their files, runs whose process died, restore."""
