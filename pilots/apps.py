"""The pilots app: registers the offline backend's answer to a page (`pilots.offline`)."""

from django.apps import AppConfig


class PilotsConfig(AppConfig):
    name = "pilots"
    verbose_name = "Pilots"

    def ready(self) -> None:
        from pilots import offline

        offline.register()
