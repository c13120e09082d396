"""Tests of the LLM jobs machinery (debates.jobs)."""
