"""What sessions leave worth keeping: notes and handoffs, recall, the brief, export and import."""
