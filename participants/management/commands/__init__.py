"""`manage.py` commands of the participants app."""
