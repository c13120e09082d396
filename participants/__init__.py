"""The participants app: the flow engine, entry and exit, responses, exclusions and places."""
