"""Management commands of the debates app."""
