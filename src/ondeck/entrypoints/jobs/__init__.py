"""The jobs loop (`ondeck jobs`, or beside the server): ticks, wake-ups, backups in threads."""
