"""The analysts' API routes, under /api/v1/."""

from django.urls import path, re_path
from drf_spectacular.views import SpectacularAPIView

from analysis import api

app_name = "api"


def nowhere(request, *args, **kwargs):
    """`api.nowhere` behind a plain function: the browsable API's breadcrumbs list every API view
    a prefix of the address resolves to, and `/api/v1/studies` (no slash) resolved to this one,
    so they read "Root › Nowhere › Studies › Nowhere › Study"."""
    return api.nowhere(request, *args, **kwargs)


nowhere.csrf_exempt = True  # as the API's own views: a POST to an unknown address is a JSON 404

urlpatterns = [
    path("", api.root, name="root"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("studies/", api.studies, name="studies"),
    path("studies/<slug:slug>/", api.study, name="study"),
    path("studies/<slug:slug>/progress/", api.progress, name="progress"),
    path("studies/<slug:slug>/tables/", api.tables, name="tables"),
    path("studies/<slug:slug>/tables/<str:name>/", api.table, name="table"),
    path("studies/<slug:slug>/tables/<str:name>.csv", api.table_csv, name="table_csv"),
    path("studies/<slug:slug>/report/", api.report, name="report"),
    path("reports/<int:report_id>/", api.report_status, name="report_status"),
    re_path(r"", nowhere),  # last: any other address under /api/v1/ is a JSON 404 too
]
