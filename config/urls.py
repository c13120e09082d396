"""HTTP routes: the admin, the health check, and the participant pages."""

from django.contrib import admin
from django.urls import include, path

from participants import views as participant_views

urlpatterns = [
    path("", participant_views.home, name="home"),
    path("healthz", participant_views.healthz, name="healthz"),
    path("favicon.ico", participant_views.favicon, name="favicon"),
    path("admin/", admin.site.urls),
    path("api/v1/", include("analysis.urls")),
    path("", include("participants.urls")),
]

handler404 = participant_views.not_found
handler500 = participant_views.server_error

admin.site.site_header = "Rostrum"
admin.site.site_title = "Rostrum"
admin.site.index_title = "Studies, participants and data"
