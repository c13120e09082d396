"""Pilot participants: simulated participants of `manage.py pilot`, marked at entry."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("participants", "0006_exit_code"),
    ]

    operations = [
        migrations.AddField(
            model_name="participant",
            name="is_pilot",
            field=models.BooleanField(
                default=False,
                help_text="A simulated participant of a pilot (`manage.py pilot`): never holds a place, left out "
                "of exports, the overview and reports (a pilot's report reads pilots only).",
            ),
        ),
    ]
