"""`manage.py` commands of the studies app."""
