"""Participant-facing pages: the study link, the current step, and the exit."""

from __future__ import annotations

from functools import cache, wraps

from django.conf import settings
from django.contrib.admin.views.decorators import staff_member_required
from django.core.exceptions import PermissionDenied
from django.db import connection
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, HttpResponseServerError
from django.shortcuts import get_object_or_404, redirect, render
from django.template import loader
from django.urls import reverse
from django.utils import translation
from django.views.decorators.http import require_GET, require_http_methods

from common import limits
from common.security import ADMIN_PREFIX
from participants import flags, services
from participants.i18n import LANG_PARAM, entry_language, language_of, participant_language
from participants.models import Participant
from studies.models import FAILED_CHECK_MESSAGE, SCREENED_OUT_MESSAGE, Study
from studies.registry import StepUnavailable
from studies.services import study_cached

# Participant pages load only our own static files: no inline script, no third party.
CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "form-action 'self' https://app.prolific.com; frame-ancestors 'none'; base-uri 'none'"
)
# Leaving early is explained on a page of ours (why, what happens next, the code and a button to
# Prolific), shown again on every visit; completing and declining consent go straight to Prolific.
EXPLAINED_EXITS = {Participant.Status.SCREENED_OUT, Participant.Status.FAILED_CHECK}


def participant_page(view):
    """No caching (back and refresh must ask the server for the current step), strict CSP."""

    @wraps(view)
    def wrapper(request, *args, **kwargs):
        response = view(request, *args, **kwargs)
        response["Cache-Control"] = "no-store, max-age=0"
        response["Content-Security-Policy"] = CSP
        return response

    return wrapper


def home(request: HttpRequest) -> HttpResponse:
    return render(request, "home.html")


def healthz(request: HttpRequest) -> HttpResponse:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
    return HttpResponse("ok", content_type="text/plain")


_FAVICON = settings.BASE_DIR / "static" / "img" / "favicon.ico"


def _error_language(request: HttpRequest) -> str:
    """The language of an error page: the link's `lang` or the browser's, where Rostrum has it
    (the admin's in English). A participant's own language is not known here (no lookup on an
    error path); German participants' browsers mostly ask for German."""
    if request.path_info.startswith(ADMIN_PREFIX):
        return "en"
    offered = [code for code, _name in settings.LANGUAGES]
    requested = request.GET.get(LANG_PARAM, "")
    return entry_language(
        offered=offered, requested=requested, accept=request.headers.get("Accept-Language", "")
    )


def not_found(request: HttpRequest, exception=None) -> HttpResponse:
    """Any 404 (handler404): what a participant with a mistyped or stale link reads, in the
    study pages' style. The address asked for is not shown back."""
    with translation.override(_error_language(request)):
        return render(request, "404.html", status=404)


def server_error(request: HttpRequest) -> HttpResponse:
    """Any 500 (handler500): the step view's language was gone by the time Django's own
    handler rendered the page (it is unwound with the exception), so German participants read
    English. No context processors, no database: the page must render whatever failed."""
    with translation.override(_error_language(request)):
        return HttpResponseServerError(loader.get_template("500.html").render())


@require_GET
def favicon(request: HttpRequest) -> HttpResponse:
    """/favicon.ico, which browsers ask for on pages that name no icon (the admin's): a 404
    there was the one console error of a researcher's walk. Participant pages name none
    (`data:`), which saves every participant the request."""
    response = HttpResponse(_favicon_bytes(), content_type="image/vnd.microsoft.icon")
    response["Cache-Control"] = "public, max-age=86400"
    return response


@cache
def _favicon_bytes() -> bytes:
    return _FAVICON.read_bytes()


@require_http_methods(["GET", "HEAD"])
@participant_page
def enter(request: HttpRequest, slug: str) -> HttpResponse:
    study = study_cached(slug=slug)
    if study is None:
        raise Http404("No such study")
    if request.method == "HEAD":
        # A link checker's (or a researcher's tool's) look at the study link: it exists, and
        # nobody enters (a HEAD was a 405, read as a broken link).
        return HttpResponse(content_type="text/html; charset=utf-8")
    try:
        pid, study_id, session_id = services.entry_params(request.GET, study=study)
        is_pilot = services.entry_pilot(request.GET, study=study)
        if not is_pilot:  # pilots come from one machine, with a token only the pilot command has
            services.entry_throttle(study=study, client=limits.request_address(request))
        participant = services.participant_enter(
            study=study,
            prolific_pid=pid,
            prolific_study_id=study_id,
            prolific_session_id=session_id,
            user_agent=request.headers.get("User-Agent", ""),
            is_pilot=is_pilot,
        )
    except services.Throttled as slow:
        return too_fast(request, slow)
    except services.EntryError as error:
        context = {"study": study, "message": str(error)}
        return render(request, "participants/entry_error.html", context, status=400)
    return redirect("step", token=participant.token)


def too_fast(request: HttpRequest, slow: services.Throttled) -> HttpResponse:
    response = render(request, "participants/too_fast.html", {"message": str(slow)}, status=429)
    response["Retry-After"] = str(slow.retry_after)
    return response


@staff_member_required
@require_GET
def preview(request: HttpRequest, slug: str) -> HttpResponse:
    """Walk the study as a throw-away participant: staff who may see studies in the admin (its
    own preview page asks the same), not any staff account (the hostile-traffic probe)."""
    if not (request.user.has_perm("studies.view_study") or request.user.has_perm("studies.change_study")):
        raise PermissionDenied
    study = get_object_or_404(Study, slug=slug)
    participant = services.participant_preview(study=study)
    return redirect("step", token=participant.token)


@require_http_methods(["GET", "POST"])
@participant_page
def step(request: HttpRequest, token: str) -> HttpResponse:
    participant = services.participant_by_token(token)
    if participant is None:
        raise Http404("No such participant")
    with participant_language(*language_of(participant)):
        return _step(request, participant)


def _step(request: HttpRequest, participant: Participant) -> HttpResponse:
    participant = services.participant_resume(participant=participant)
    current = services.participant_current_step(participant) if participant.is_active else None
    if current is None:
        return finished(request, participant)
    kind = services.kind_for(current)
    ctx = services.step_context(participant, current)
    pending = services.place_pending(participant, kind)
    if pending:
        try:
            services.place_throttle(participant=participant, client=limits.request_address(request))
        except services.Throttled as slow:
            return too_fast(request, slow)
    if request.method == "POST":
        response = submit(request, participant, current, kind, ctx)
    else:
        response = show(request, participant, kind, ctx)
    if pending:  # the page, or the answer to a page never served, may have given a place
        services.place_taken(participant=participant, now=ctx.now, answered=request.method == "POST")
    return response


def show(request, participant, kind, ctx) -> HttpResponse:
    services.step_shown(participant=participant, now=ctx.now)
    try:
        form = kind.build_form(ctx)
        return render_step(request, ctx, kind, form)
    except StepUnavailable as unavailable:
        services.step_unavailable(participant=participant, error=unavailable)
        return finished(request, participant)


def submit(request, participant, current, kind, ctx) -> HttpResponse:
    here = reverse("step", kwargs={"token": participant.token})
    if request.POST.get("_position") != str(current.position):
        return HttpResponseRedirect(f"{here}?moved=1", status=303)
    try:
        form = kind.build_form(ctx, data=request.POST)
        if not form.is_valid():
            return render_step(request, ctx, kind, form, status=200)
        timing = services.ClientTiming.from_post(request.POST)
        evidence = flags.Evidence.from_post(request.POST, form)
        services.step_submit(
            participant=participant, step=current, kind=kind, form=form, timing=timing, evidence=evidence
        )
    except services.StaleSubmission:
        return HttpResponseRedirect(f"{here}?moved=1", status=303)
    except StepUnavailable as unavailable:
        services.step_unavailable(participant=participant, error=unavailable)
    url = services.exit_url(participant)
    if participant.is_active or participant.is_preview or not url or participant.status in EXPLAINED_EXITS:
        return HttpResponseRedirect(here, status=303)
    return HttpResponseRedirect(url, status=303)


def render_step(request, ctx, kind, form, status: int = 200) -> HttpResponse:
    context = {
        "participant": ctx.participant,
        "study": ctx.study,
        "step": ctx.step,
        "kind": kind,
        "config": kind.config(ctx.step),
        "form": form,
        "position": ctx.position,
        "total": len(ctx.steps),
        "moved": request.GET.get("moved") == "1",
        "honeypot": flags.HONEYPOT,
        **kind.context(ctx),
    }
    return render(request, kind.template, context, status=status)


def finished(request: HttpRequest, participant: Participant) -> HttpResponse:
    study = participant.study
    messages = {
        Participant.Status.SCREENED_OUT: study.screened_out_message.strip() or SCREENED_OUT_MESSAGE,
        Participant.Status.FAILED_CHECK: study.failed_check_message.strip() or FAILED_CHECK_MESSAGE,
    }
    context = {
        "participant": participant,
        "study": study,
        "code": services.exit_code(participant),
        "exit_url": services.exit_url(participant),
        "message": messages.get(participant.status, ""),
    }
    return render(request, "participants/finished.html", context)
