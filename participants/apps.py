"""The participants app: the flow engine, entry and exit, responses, timing, exclusions and
places. Its `ready()` registers the step kinds it owns, its column in the study list, and the
study's "Prolific" page (participants/prolific_admin.py: Prolific's API from the admin)."""

from django.apps import AppConfig


class ParticipantsConfig(AppConfig):
    name = "participants"

    def ready(self) -> None:
        from participants import admin as participants_admin
        from participants import prolific_admin, prolific_groups, steps
        from studies import admin as studies_admin
        from studies import registry
        from studies import services as studies

        registry.register_all(
            steps.ConsentKind,
            steps.InstructionsKind,
            steps.DebriefKind,
            steps.QuestionnaireKind,
            steps.AttentionCheckKind,
            steps.ScreeningKind,
        )
        studies_admin.study_columns.append(participants_admin.study_participant_counts)
        studies_admin.study_links.append(prolific_admin.study_links)
        studies_admin.study_urls.append(prolific_admin.study_urls)
        # A duplicated study keeps its source's participants out (a new wave takes new people).
        studies.duplicate_hooks.append(prolific_groups.recruitment_copy)
