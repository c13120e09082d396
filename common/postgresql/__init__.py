"""A database backend: Django's PostgreSQL one, with its pooled connections checked (`base`)."""
