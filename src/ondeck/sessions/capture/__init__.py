"""The capture wing: everything a hook, or the mod's hand-over to one, loads to turn an
agent's event into a stored record (entrypoints/hooks/fast_path.py holds its wall)."""
