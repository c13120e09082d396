"""Prolific's webhook: a submission's status changed (returned, timed out, rejected, …). For a
deployment with a public HTTPS address; the periodic sync covers everything it would, later."""

from __future__ import annotations

import json
import logging

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from participants import prolific

log = logging.getLogger(__name__)


@csrf_exempt  # a machine's POST, authenticated by its signature instead
@require_POST
def webhook(request: HttpRequest) -> HttpResponse:
    """404 unless PROLIFIC_WEBHOOK_SECRET is set; 403 for a bad or stale signature; 503 when the
    API could not be asked what the event left out (Prolific sends it again)."""
    if not settings.PROLIFIC_WEBHOOK_SECRET:
        return HttpResponse(status=404)
    verified = prolific.webhook_verified(
        body=request.body,
        timestamp=request.headers.get("X-Prolific-Request-Timestamp", ""),
        signature=request.headers.get("X-Prolific-Request-Signature", ""),
        secret=settings.PROLIFIC_WEBHOOK_SECRET,
    )
    if not verified:
        return HttpResponse("Signature refused.", status=403, content_type="text/plain")
    try:
        event = json.loads(request.body)
    except ValueError:
        return HttpResponse("Not JSON.", status=400, content_type="text/plain")
    if not isinstance(event, dict):
        return HttpResponse("Not an event.", status=400, content_type="text/plain")
    try:
        prolific.webhook_event(event=event)
    except prolific.ProlificError as error:
        log.warning("Prolific webhook: %s", error)
        return HttpResponse("Try again later.", status=503, content_type="text/plain")
    return HttpResponse(status=204)
