"""`X-Served-By: <SERVER_NAME_TAG>` on every HTTP response of this server process, when the
setting is set (devtools/cluster.py names its servers app1, app2, …): which server of several
behind a proxy answered. Unset (the default), the middleware is left out of the chain."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed


class ServerTag:
    def __init__(self, get_response) -> None:
        if not settings.SERVER_NAME_TAG:
            raise MiddlewareNotUsed
        self.get_response = get_response
        self.tag = settings.SERVER_NAME_TAG

    def __call__(self, request):
        response = self.get_response(request)
        response["X-Served-By"] = self.tag
        return response
