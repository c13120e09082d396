"""Tests of design C, persuasion dialogues."""
