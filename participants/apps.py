"""The participants app: the flow engine, entry and exit, responses, timing, exclusions and
places. Its `ready()` registers the step kinds it owns."""

from django.apps import AppConfig


class ParticipantsConfig(AppConfig):
    name = "participants"

    def ready(self) -> None:
        from participants import steps
        from studies import registry

        registry.register_all(
            steps.ConsentKind,
            steps.InstructionsKind,
            steps.DebriefKind,
            steps.QuestionnaireKind,
            steps.AttentionCheckKind,
            steps.ScreeningKind,
        )
