"""The analysis app: exports, metrics and the analyst's pages. It reads every other app and
is read by none; its `ready()` links its pages from the study and instance-set admin."""

from django.apps import AppConfig


class AnalysisConfig(AppConfig):
    name = "analysis"

    def ready(self) -> None:
        from analysis import admin as analysis_admin
        from debates.pairwise import admin as pairwise_admin
        from studies import admin as studies_admin

        studies_admin.study_links.append(analysis_admin.study_links)
        studies_admin.study_urls.append(analysis_admin.study_urls)
        pairwise_admin.instance_set_links.append(analysis_admin.instance_set_links)
        pairwise_admin.instance_set_urls.append(analysis_admin.instance_set_urls)
