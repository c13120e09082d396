"""Pilots: simulated participants walking a study on a running server (`manage.py pilot`)."""
