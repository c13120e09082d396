"""`manage.py release_expired_leases`: what the periodic task does, by hand."""

from django.core.management.base import BaseCommand

from participants.services import release_expired_leases


class Command(BaseCommand):
    help = "Time out participants past their study's time limit, freeing their places."

    def handle(self, *args, **options):
        count = release_expired_leases()
        self.stdout.write(f"Timed out {count} participant(s).")
