"""The HTTP JSON API under /api/v1 (FastAPI). Thin: parse, call one service, render."""
