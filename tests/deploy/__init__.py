"""The scaled-out deployment: several servers behind nginx, workers, beat."""
