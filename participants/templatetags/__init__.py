"""Template tags of participant pages."""
