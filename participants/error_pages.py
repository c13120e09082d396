"""With DEBUG on (the embedded default, the demo), Django answers a 404 with its developer page,
which lists the site's URL patterns: a participant with a mistyped or stale link on the demo
read that instead of the page production shows them (`participants.views.not_found`). This
middleware, installed only with DEBUG on, shows the participants' page for any HTML 404
outside the admin and the API, where a developer wants Django's."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from common.security import ADMIN_PREFIX

DEVELOPER_PATHS = (ADMIN_PREFIX, "/api/")


class ParticipantNotFoundPage:
    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            response.status_code == 404
            and response.get("Content-Type", "").startswith("text/html")
            and not request.path_info.startswith(DEVELOPER_PATHS)
        ):
            from participants.views import not_found  # the views import the models

            return not_found(request)
        return response
