from django.apps import AppConfig


class ParticipantsConfig(AppConfig):
    name = "participants"

    def ready(self) -> None:
        from participants import steps  # noqa: F401  (registers the step kinds)
