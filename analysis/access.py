"""Who may see which study's data (overview, exports, reports, API), and whether they see
Prolific's ids or pseudonyms of them."""

from __future__ import annotations

import hashlib
import hmac

from django.conf import settings
from django.db.models import QuerySet

from studies.models import Study

RAW_IDS_PERMISSION = "participants.view_prolific_ids"


def studies_visible_to(user) -> QuerySet[Study]:
    """Every study for a user with the global 'Can view study' permission (superusers
    included); otherwise the studies that name the user among their viewers."""
    if not user.is_authenticated or not user.is_active:
        return Study.objects.none()
    if user.has_perm("studies.view_study"):
        return Study.objects.all()
    return Study.objects.filter(viewers=user)


def may_see(user, study: Study) -> bool:
    return studies_visible_to(user).filter(pk=study.pk).exists()


def sees_raw_ids(user) -> bool:
    return user.has_perm(RAW_IDS_PERMISSION)


def pseudonym(study: Study, value: str) -> str:
    """A stable pseudonym of a Prolific id within one study (keyed with PSEUDONYM_KEY, by default
    SECRET_KEY): the same participant gets the same pseudonym in every table of the study, and
    another one in another study, so tables still join but ids do not link studies or reach
    Prolific."""
    if not value:
        return ""
    digest = hmac.new(settings.PSEUDONYM_KEY.encode(), f"{study.pk}:{value}".encode(), hashlib.sha256)
    return "p-" + digest.hexdigest()[:20]


PSEUDONYMISED_COLUMNS = ("prolific_pid", "prolific_session_id")


def pseudonymise(row: dict, study: Study) -> dict:
    for column in PSEUDONYMISED_COLUMNS:
        if column in row and row[column]:
            row[column] = pseudonym(study, str(row[column]))
    return row
