"""Tests of the participants app."""
