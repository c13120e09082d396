"""Tests of the studies app."""
