"""`manage.py verify_study SLUG`: recompute a study's snapshot and say whether anything
drifted from what was frozen when it went live."""

import json

from django.core.management.base import BaseCommand, CommandError

from studies.models import Study
from studies.snapshot import digest, snapshot_drift, study_snapshot


class Command(BaseCommand):
    help = "Recompute a study's snapshot and compare it with the one frozen at go-live."

    def add_arguments(self, parser):
        parser.add_argument("slug")
        parser.add_argument("--instrument", metavar="FILE", help="also write the frozen snapshot as JSON")

    def handle(self, *args, slug: str, instrument: str | None, **options):
        study = Study.objects.filter(slug=slug).first()
        if study is None:
            raise CommandError(f"no study with slug {slug!r}")
        if not study.snapshot_sha256:
            raise CommandError(f"{slug} has never gone live: there is no frozen snapshot to verify")
        if instrument:
            with open(instrument, "w", encoding="utf-8") as handle:
                json.dump(study.snapshot, handle, indent=1, ensure_ascii=False)
        if digest(study.snapshot) != study.snapshot_sha256:
            raise CommandError(f"{slug}: the stored snapshot does not match its hash: it was altered")
        now = study_snapshot(study)
        drift = snapshot_drift(study.snapshot, now)
        if drift:
            lines = "\n".join(f"  {d}" for d in drift)
            frozen = f"{study.snapshot_sha256} (frozen {study.snapshot_at:%Y-%m-%d %H:%M} UTC)"
            raise CommandError(f"{slug} drifted from its snapshot {frozen}; now {digest(now)}:\n{lines}")
        self.stdout.write(self.style.SUCCESS(f"{slug} matches its snapshot {study.snapshot_sha256}"))
