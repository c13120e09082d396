"""Building design A's library with models (debates.generation)."""
