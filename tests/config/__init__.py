"""Tests of the project's configuration."""
