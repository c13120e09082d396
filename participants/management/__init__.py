"""Management commands of the participants app."""
