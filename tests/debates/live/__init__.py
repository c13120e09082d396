"""Tests of design B, live debate and consultancy."""
