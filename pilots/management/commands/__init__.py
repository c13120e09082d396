"""`manage.py pilot`."""
