"""Tests of the pilots: simulated participants."""
