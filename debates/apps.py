from django.apps import AppConfig


class DebatesConfig(AppConfig):
    name = "debates"

    def ready(self) -> None:
        from debates import live_steps, pairwise, pairwise_steps, services, steps  # noqa: F401  (kinds, keepers)
