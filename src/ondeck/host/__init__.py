"""What ondeck reads from and does to the machine it runs on: settings from the environment and
files, file modes only the owner reads, the owner-only socket, git.
"""
