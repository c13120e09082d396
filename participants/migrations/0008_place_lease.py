"""The idle lease of a place taken and not worked on, and session ids looked up per study."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("participants", "0007_participant_is_pilot"),
        ("studies", "0005_study_exit_messages"),
    ]

    operations = [
        migrations.AddField(
            model_name="participant",
            name="place_idle",
            field=models.BooleanField(
                default=False,
                help_text="Took a place and has not answered since: the place is held PLACE_IDLE_MINUTES, and the first answer extends it to the time limit.",
            ),
        ),
        migrations.AddField(
            model_name="participant",
            name="placed_at",
            field=models.DateTimeField(
                blank=True,
                help_text="When a page first gave the participant a place (a dialogue, a claim, comparisons).",
                null=True,
            ),
        ),
        migrations.AddIndex(
            model_name="participant",
            index=models.Index(fields=["study", "prolific_session_id"], name="participant_session"),
        ),
    ]
