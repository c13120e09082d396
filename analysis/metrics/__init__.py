"""The statistics of the papers: pure functions over plain data, tested against numbers
computed independently."""
