"""`manage.py` commands of the debates app: the imports and the demo."""
