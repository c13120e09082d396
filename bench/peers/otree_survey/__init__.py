"""The oTree project of the arrivals benchmark's peer (run by oTree, not imported by us)."""
