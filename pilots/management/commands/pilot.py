"""`manage.py pilot SLUG --participants N [--policy scripted|llm] [--concurrency C] [--base-url URL]
[--model NAME]`: simulated participants walk the study on a running server, marked as pilots;
then the study's report on their data only, and the pages where they got stuck or failed checks."""

import logging
from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from participants.services import PILOT_STUDY_STATUSES
from pilots.services import exclusions_text, run_pilot
from studies.models import Study


class Command(BaseCommand):
    help = (
        "Pilot a study: N simulated participants walk it through a running server's pages and "
        "websockets as browsers would (marked as pilots, left out of the real data; a draft study "
        "may be piloted), then the report on their data and where they got stuck or failed checks."
    )

    def add_arguments(self, parser):
        parser.add_argument("study", help="the study's slug")
        parser.add_argument("--participants", type=int, required=True, help="how many simulated participants")
        parser.add_argument("--policy", choices=["scripted", "llm"], default="scripted")
        parser.add_argument("--concurrency", type=int, default=4, help="participants at a time (default 4)")
        parser.add_argument(
            "--base-url",
            default=getattr(settings, "SITE_URL", "http://127.0.0.1:8000"),
            help="the running server (default: SITE_URL)",
        )
        parser.add_argument(
            "--model", default="", help="with --policy llm: the model (through debates/llm.py)"
        )
        parser.add_argument("--seed", type=int, default=1, help="seeds temperaments and answers (default 1)")
        parser.add_argument(
            "--attentive", type=float, default=0.9, help="share of attentive scripted participants (0.9)"
        )
        parser.add_argument("--out", metavar="DIR", help="the report folder (default: var/pilots/…)")
        parser.add_argument("--no-report", action="store_true", help="walk and list the problems only")

    def handle(self, *args, study, participants, policy, concurrency, base_url, model, seed, **options):
        found = Study.objects.filter(slug=study).first()
        if found is None:
            raise CommandError(f"no study with slug {study!r}")
        if found.status not in PILOT_STUDY_STATUSES:
            raise CommandError(
                f"the study is {found.get_status_display().lower()}: pilots run on draft or live studies"
            )
        if participants < 1:
            raise CommandError("--participants must be at least 1")
        if policy == "llm" and not model:
            raise CommandError("--policy llm needs --model")
        if not 0 <= options["attentive"] <= 1:
            raise CommandError("--attentive is a share between 0 and 1")
        logging.getLogger("httpx").setLevel(logging.WARNING)  # one line a request otherwise
        self.stdout.write(f"Piloting {found.slug} with {participants} {policy} participants on {base_url} …")
        result = run_pilot(
            found,
            participants=participants,
            base_url=base_url,
            policy=policy,
            model=model,
            concurrency=concurrency,
            seed=seed,
            attentive=options["attentive"],
            out=Path(options["out"]) if options["out"] else None,
            report=not options["no_report"],
        )
        endings = ", ".join(f"{code} ×{n}" for code, n in sorted(result.endings.items()))
        self.stdout.write(f"Endings: {endings}")
        if result.exclusions:
            self.stdout.write(f"Exclusions from analysis: {exclusions_text(result.exclusions)}")
        if result.problems:
            self.stdout.write(
                self.style.WARNING("Pages where simulated participants got stuck or failed checks:")
            )
            for problem in result.problems:
                self.stdout.write(f"  {problem.line()}")
        else:
            self.stdout.write(self.style.SUCCESS("No page stopped a simulated participant; no check failed."))
        fallbacks = [n for n in result.notes if n.get("result") == "fallback"]
        if fallbacks:
            self.stdout.write(
                self.style.WARNING(
                    f"The model's answer was unusable {len(fallbacks)} times (scripted answer used)"
                )
            )
        if result.report_error:
            self.stdout.write(self.style.ERROR(f"The report failed: {result.report_error}"))
        elif not options["no_report"]:
            self.stdout.write(self.style.SUCCESS(f"Report of the pilot data written to {result.report_dir}/"))
        self.stdout.write(f"  {result.report_dir / 'pilot.json'}")
