"""Tests of the LLM participants (design A, paper 000 Tables 30-34)."""
