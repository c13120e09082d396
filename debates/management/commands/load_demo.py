import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from debates.claims_import import claims_import
from debates.demo.claim_debate import CLAIM_DEBATE_STUDY, CLAIMS_FILE, DEBATERS
from debates.demo.mystery import CASES_FILE, MYSTERY_STUDY
from debates.demo.persuasion_pairs import PAIRS_SET, PERSUASION_PAIRS_STUDY
from debates.importing import cases_import
from debates.models import Claim, DebaterConfig, Dialogue, InstanceSet, StudyClaim, StudyDialogue
from debates.pairwise import instance_set_from_dialogues
from studies.models import Study
from studies.services import study_build, study_set_status

PASSWORD_FILE = Path(settings.BASE_DIR) / "var" / "demo-admin.txt"


class Command(BaseCommand):
    help = "Load the demo studies (idempotent) and, with --admin, create the demo admin login."

    def add_arguments(self, parser):
        parser.add_argument("--admin", action="store_true", help="create or reset the 'admin' login")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, admin: bool, base_url: str, **options):
        summary = cases_import(text=CASES_FILE.read_text(encoding="utf-8"))
        self.stdout.write(f"Demo cases: {summary}")
        study = self.mystery_study()
        self.stdout.write(f"Demo claims: {claims_import(text=CLAIMS_FILE.read_text(encoding='utf-8'))}")
        live = self.claim_study()
        pairs = self.pairs_study()
        if admin:
            self.admin_login(base_url)
        self.print_links(base_url, [study, live, pairs])

    @transaction.atomic
    def mystery_study(self) -> Study:
        study = Study.objects.filter(slug=MYSTERY_STUDY["slug"]).first()
        if study is None:
            study = study_build(spec=MYSTERY_STUDY)
            self.stdout.write(f"Created study {study.slug!r}")
        case_slugs = ["lighthouse-ledger", "orchard-recital"]
        for dialogue in Dialogue.objects.filter(case__slug__in=case_slugs):
            StudyDialogue.objects.get_or_create(study=study, dialogue=dialogue)
        if study.status == Study.Status.DRAFT:
            study_set_status(study=study, status=Study.Status.LIVE)
        return study

    @transaction.atomic
    def claim_study(self) -> Study:
        for spec in DEBATERS:
            DebaterConfig.objects.get_or_create(name=spec["name"], defaults=spec)
        study = Study.objects.filter(slug=CLAIM_DEBATE_STUDY["slug"]).first()
        if study is None:
            study = study_build(spec=CLAIM_DEBATE_STUDY)
            self.stdout.write(f"Created study {study.slug!r}")
        for claim in Claim.objects.filter(slug__in=self.demo_claim_slugs()):
            StudyClaim.objects.get_or_create(study=study, claim=claim)
        if study.status == Study.Status.DRAFT:
            study_set_status(study=study, status=Study.Status.LIVE)
        return study

    @transaction.atomic
    def pairs_study(self) -> Study:
        pool = InstanceSet.objects.filter(slug=PAIRS_SET["slug"]).first()
        if pool is None:
            pool = InstanceSet.objects.create(**PAIRS_SET)
            dialogues = list(Dialogue.objects.filter(case__slug__in=["lighthouse-ledger", "orchard-recital"]))
            sample = instance_set_from_dialogues(instance_set=pool, dialogues=dialogues)
            self.stdout.write(f"Built instance set {pool.slug!r}: {len(sample.pairs)} instances")
        study = Study.objects.filter(slug=PERSUASION_PAIRS_STUDY["slug"]).first()
        if study is None:
            study = study_build(spec=PERSUASION_PAIRS_STUDY)
            study_set_status(study=study, status=Study.Status.LIVE)
            self.stdout.write(f"Created study {study.slug!r}")
        return study

    def demo_claim_slugs(self) -> list[str]:
        import json

        return [c["slug"] for c in json.loads(CLAIMS_FILE.read_text(encoding="utf-8"))["claims"]]

    def admin_login(self, base_url: str) -> None:
        PASSWORD_FILE.parent.mkdir(parents=True, exist_ok=True)
        if PASSWORD_FILE.exists():
            password = PASSWORD_FILE.read_text().strip()
        else:
            password = secrets.token_urlsafe(12)
            PASSWORD_FILE.write_text(password + "\n")
            PASSWORD_FILE.chmod(0o600)
        user_model = get_user_model()
        user = user_model.objects.filter(username="admin").first() or user_model(username="admin")
        user.is_staff = user.is_superuser = True
        user.set_password(password)
        user.save()
        self.stdout.write(f"\nAdmin: {base_url}/admin/   user: admin   password: {password}")

    def print_links(self, base_url: str, studies: list[Study]) -> None:
        for study in studies:
            self.stdout.write(f"\nStudy {study.slug!r} ({study.get_status_display()})")
            self.stdout.write(f"  Preview (staff):   {base_url}/s/{study.slug}/preview/")
            for n in range(1, 4):
                pid, sid, sess = (secrets.token_hex(12) for _ in range(3))
                self.stdout.write(
                    f"  Participant {n}:     {base_url}/s/{study.slug}/"
                    f"?PROLIFIC_PID={pid}&STUDY_ID={sid}&SESSION_ID={sess}"
                )
