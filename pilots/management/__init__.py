"""The pilots' management commands."""
