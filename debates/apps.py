from django.apps import AppConfig


class DebatesConfig(AppConfig):
    name = "debates"

    def ready(self) -> None:
        from debates import live_steps, services, steps  # noqa: F401  (register step kinds, place keeper)
