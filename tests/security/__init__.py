"""Tests of hostile use (issue 12): floods, sockets, oversized answers, admin logins, headers."""
