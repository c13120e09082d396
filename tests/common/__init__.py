"""Tests of the pieces every app may use."""
