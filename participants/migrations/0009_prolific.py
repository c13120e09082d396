"""Prolific through its API: the study on Prolific, its submissions beside the participants, bonuses."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('participants', '0008_place_lease'),
        ('studies', '0005_study_exit_messages'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name='ProlificStudy',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('internal_name', models.CharField(help_text="The draft's internal name on Prolific: finds a draft whose creation was cut short before its id was saved, instead of creating a second one.", max_length=100, unique=True)),
                ('status', models.CharField(blank=True, help_text="Prolific's status of the study (UNPUBLISHED, ACTIVE, PAUSED, …).", max_length=30)),
                ('places', models.PositiveIntegerField(blank=True, null=True)),
                ('reward_cents', models.PositiveIntegerField(blank=True, help_text='Reward per place, in cents.', null=True)),
                ('maximum_minutes', models.PositiveIntegerField(blank=True, null=True)),
                ('created_at', models.DateTimeField()),
                ('synced_at', models.DateTimeField(blank=True, help_text='The last sync of its submissions.', null=True)),
                ('sync_error', models.CharField(blank=True, help_text='Why the last sync failed, if it did.', max_length=300)),
                ('study', models.OneToOneField(on_delete=django.db.models.deletion.CASCADE, related_name='prolific', to='studies.study')),
            ],
            options={
                'verbose_name': 'study on Prolific',
                'verbose_name_plural': 'studies on Prolific',
            },
        ),
        migrations.CreateModel(
            name='Bonus',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('submission_id', models.CharField(help_text='The Prolific submission it is checked against.', max_length=64)),
                ('amount_cents', models.PositiveIntegerField()),
                ('reason', models.CharField(blank=True, max_length=200)),
                ('request_key', models.CharField(help_text='One per form sent: a double click records nothing more.', max_length=100, unique=True)),
                ('state', models.CharField(choices=[('recorded', 'Recorded, not sent'), ('sending', 'Sending (or outcome unknown)'), ('sent', 'Sent to Prolific'), ('failed', 'Failed (not paid)')], default='recorded', max_length=10)),
                ('bulk_id', models.CharField(blank=True, help_text="Prolific's bulk bonus payment id.", max_length=64)),
                ('payments_before', models.PositiveIntegerField(blank=True, help_text='Bonus payments the submission had on Prolific before this one was paid.', null=True)),
                ('pay_started_at', models.DateTimeField(blank=True, help_text='Set (and committed) just before the pay call: empty, it was never made.', null=True)),
                ('attempts', models.PositiveSmallIntegerField(default=0)),
                ('error', models.CharField(blank=True, max_length=300)),
                ('created_at', models.DateTimeField()),
                ('sending_at', models.DateTimeField(blank=True, null=True)),
                ('sent_at', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('participant', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='bonuses', to='participants.participant')),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.PROTECT, related_name='bonuses', to='studies.study')),
            ],
            options={
                'verbose_name_plural': 'bonuses',
                'ordering': ['-created_at', 'id'],
                'constraints': [models.UniqueConstraint(condition=models.Q(('state', 'sending')), fields=('participant',), name='one_bonus_sending_per_participant')],
            },
        ),
        migrations.CreateModel(
            name='ProlificSubmission',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('submission_id', models.CharField(max_length=64, unique=True)),
                ('prolific_pid', models.CharField(max_length=64)),
                ('status', models.CharField(choices=[('ACTIVE', 'ACTIVE'), ('AWAITING_REVIEW', 'AWAITING REVIEW'), ('APPROVED', 'APPROVED'), ('PARTIALLY_APPROVED', 'PARTIALLY APPROVED'), ('REJECTED', 'REJECTED'), ('RETURNED', 'RETURNED'), ('TIMED_OUT', 'TIMED-OUT'), ('SCREENED_OUT', 'SCREENED OUT'), ('PROCESSING', 'PROCESSING'), ('RESERVED', 'RESERVED'), ('UNKNOWN', 'UNKNOWN')], max_length=20)),
                ('entered_code', models.CharField(blank=True, help_text='The code entered on Prolific.', max_length=64)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('completed_at', models.DateTimeField(blank=True, null=True)),
                ('seen_at', models.DateTimeField(help_text='When Prolific last told us about it (sync or webhook).')),
                ('reviewed_at', models.DateTimeField(blank=True, null=True)),
                ('rejection_category', models.CharField(blank=True, max_length=30)),
                ('rejection_message', models.TextField(blank=True)),
                ('participant', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='prolific_submissions', to='participants.participant')),
                ('reviewed_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='prolific_submissions', to='studies.study')),
            ],
            options={
                'ordering': ['study', '-started_at', 'id'],
                'indexes': [models.Index(fields=['study', 'prolific_pid'], name='prolific_submission_pid')],
            },
        ),
    ]
