"""Management commands of the studies app."""
