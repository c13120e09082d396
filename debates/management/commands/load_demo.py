"""`manage.py load_demo`: the demo studies (idempotent), their links and the demo admin login."""

import secrets
from pathlib import Path
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand

from debates.demo import loader
from debates.demo.persona import design_b_judge_jobs
from studies.models import Study
from studies.texts import study_languages

PASSWORD_FILE = Path(settings.BASE_DIR) / "var" / "demo-admin.txt"
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}


def exposure_advice(base_url: str) -> list[str]:
    """How to let others see the demo safely: it runs with DEBUG on and a development key."""
    url = urlsplit(base_url)
    port = url.port or 8000
    lines = []
    if url.hostname not in LOOPBACK:
        lines.append(
            f"WARNING: {base_url} is not this machine's loopback address. The demo runs with DEBUG on, a "
            "development secret key and no TLS: never let it answer a network directly."
        )
    return [
        *lines,
        "The demo is for this machine (keep HOST=127.0.0.1). To show it to others, either",
        f"  - let them in over SSH: ssh -N -L {port}:127.0.0.1:{port} you@this-machine, then open "
        f"http://127.0.0.1:{port}/ there, or",
        f"  - keep it on 127.0.0.1:{port} behind a TLS proxy (nginx, Caddy) with the production settings: "
        "DEBUG=0, your own SECRET_KEY, ALLOWED_HOSTS (README: Showing the demo to others).",
    ]


class Command(BaseCommand):
    help = "Load the demo studies (idempotent) and, with --admin, create the demo admin login."

    def add_arguments(self, parser):
        parser.add_argument("--admin", action="store_true", help="create or reset the 'admin' login")
        parser.add_argument("--base-url", default="http://127.0.0.1:8000")

    def handle(self, *args, admin: bool, base_url: str, **options):
        demo = loader.load_all()
        self.stdout.write(f"Demo cases: {demo.cases}")
        self.stdout.write(f"Demo claims: {demo.claims}")
        self.stdout.write(f"Demo instance set: {loader.pairs_set().instances.count()} instances")
        batch = loader.persuasion_batch()
        self.stdout.write(
            f"Demo model-versus-model batch {batch.name!r}: {batch.get_status_display().lower()}"
        )
        job = loader.generation_job()
        built = job.items.filter(key__startswith="dialogue:", status="done").count()
        self.stdout.write(
            f"Demo generation job {job.name!r}: {job.get_status_display().lower()}, {built} dialogues built "
            "(admin: LLM jobs; the dialogues with their quality scores under Dialogues)"
        )
        job = loader.llm_participants_job()
        self.stdout.write(f"Demo LLM participants job {job.name!r}: {job.get_status_display().lower()}")
        judged = design_b_judge_jobs()  # persona judges, strategy raters: once claim-debate has data
        for job in judged:
            self.stdout.write(f"Demo LLM judges job {job.name!r}: {job.get_status_display().lower()}")
        if not judged:
            self.stdout.write(
                "Demo LLM judges (claim-debate): no finished claim sessions yet; walk some participants "
                "(python -m devtools.walk_demo) and load the demo again to judge them."
            )
        if admin:
            self.admin_login(base_url)
        self.print_links(base_url, demo.studies)
        self.stdout.write("\n" + "\n".join(exposure_advice(base_url)))

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
            pilot = ", a pilot: any STUDY_ID, the offline model" if study.pilot else ""
            self.stdout.write(f"\nStudy {study.slug!r} ({study.get_status_display()}{pilot})")
            self.stdout.write(f"  Preview (staff):   {base_url}/s/{study.slug}/preview/")
            for n in range(1, 4):
                pid, sid, sess = (secrets.token_hex(12) for _ in range(3))
                self.stdout.write(
                    f"  Participant {n}:     {base_url}/s/{study.slug}/"
                    f"?PROLIFIC_PID={pid}&STUDY_ID={sid}&SESSION_ID={sess}"
                )
            for language in study_languages(study)[1:]:  # a study offered in other languages
                pid, sid, sess = (secrets.token_hex(12) for _ in range(3))
                self.stdout.write(
                    f"  In {language}:{' ' * (15 - len(language))}{base_url}/s/{study.slug}/"
                    f"?PROLIFIC_PID={pid}&STUDY_ID={sid}&SESSION_ID={sess}&lang={language}"
                )
