"""Persuasion steps gained `tell_stand_in` (on by default: the dialogue page says when the AI
takes an empty seat). A study already locked (participants have entered) keeps what its
participants so far saw: the setting is written off for it, so its page does not change in the
middle of data collection. Its experimenter may turn it on (by a new draft, as any change)."""

from django.db import migrations


def keep_running_studies_as_they_were(apps, schema_editor):
    Step = apps.get_model("studies", "Step")
    for step in Step.objects.filter(kind="persuasion_dialogue", study__locked_at__isnull=False):
        config = dict(step.config or {})
        if "tell_stand_in" not in config:
            config["tell_stand_in"] = False
            step.config = config
            step.save(update_fields=["config"])


class Migration(migrations.Migration):
    dependencies = [
        ("debates", "0010_conditions"),
        ("studies", "0007_study_languages"),
    ]

    operations = [migrations.RunPython(keep_running_studies_as_they_were, migrations.RunPython.noop)]
