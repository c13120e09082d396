"""Tests of the analysis app."""
