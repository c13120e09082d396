"""Template tags of the study designs."""
