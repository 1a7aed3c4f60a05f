"""What a session is told when it starts: built from every domain, and rendered."""
