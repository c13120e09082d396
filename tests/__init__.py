"""Rostrum's test suite; its folders mirror the apps, `support/` holds what they share."""
