"""Tests of the pure statistics layer of the analysis app (no database)."""
