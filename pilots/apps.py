"""The pilots app: registers the offline backend's answer to a page (`pilots.offline`), the
"pilot" job kind (`pilots.jobs`) and the study admin's "Pilot this study" (`pilots.admin`)."""

from django.apps import AppConfig


class PilotsConfig(AppConfig):
    name = "pilots"
    verbose_name = "Pilots"

    def ready(self) -> None:
        from debates.jobs import kinds
        from pilots import admin, jobs, offline
        from studies import admin as studies_admin

        offline.register()
        kinds.register(jobs.PilotKind)
        studies_admin.study_links.append(admin.study_links)
        studies_admin.study_urls.append(admin.study_urls)
