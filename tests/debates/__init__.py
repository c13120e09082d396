"""Tests of the debates app: the shared parts here, each design in its folder."""
