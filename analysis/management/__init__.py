"""Management commands of the analysis app."""
