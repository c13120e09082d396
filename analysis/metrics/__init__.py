"""The statistics of the papers: pure functions over data frames, tested against independent numbers."""
