"""Tests of design D, pairwise comparisons."""
