"""Analyses behind the paper's claims: each takes tidy tables or runs and
returns plain, JSON-ready figures (no plotting, no file access)."""
