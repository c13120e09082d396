"""`manage.py` commands of the analysis app."""
