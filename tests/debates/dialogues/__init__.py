"""Tests of design A, pre-generated dialogues."""
