"""The admin's home in the order of the experimenter's work: the studies first, then the
content they use, then the participants and their answers, then the LLM jobs and the model
log; accounts last. Models are named by "app_label.ModelName"; a model not listed here goes
to "Other", before the accounts, so a new admin page is never hidden."""

from __future__ import annotations

from types import MethodType

from django.contrib.admin import AdminSite

SECTIONS = [
    ("Studies", ["studies.Study", "studies.Step", "participants.ProlificStudy"]),
    (
        "Content: cases, claims, comparison sets, agents",
        [
            "debates.Case",
            "debates.Dialogue",
            "debates.Condition",
            "debates.Claim",
            "debates.DebaterConfig",
            "debates.InstanceSet",
            "debates.Topic",
            "debates.AgentConfig",
        ],
    ),
    (
        "Participants and their answers",
        [
            "participants.Participant",
            "participants.ProlificSubmission",
            "participants.Bonus",
            "participants.Exclusion",
            "debates.Judgement",
            "debates.BiasReport",
            "debates.DialogueAssignment",
            "debates.LiveSession",
            "debates.Comparison",
            "debates.PersuasionDialogue",
        ],
    ),
    (
        "LLM jobs, batches and the model log",
        [
            "debates.Job",
            "debates.JobItem",
            "debates.PromptTemplate",
            "debates.PersuasionBatch",
            "debates.LLMCall",
        ],
    ),
]
ACCOUNT_APPS = {"auth", "authtoken", "axes"}


def workflow_app_list(site: AdminSite, request, app_label: str | None = None) -> list[dict]:
    """AdminSite.get_app_list, grouped and ordered by the workflow (an app's own page keeps
    Django's list of that app)."""
    if app_label:
        return AdminSite.get_app_list(site, request, app_label)
    apps = site._build_app_dict(request)
    models = {f"{label}.{m['object_name']}": (app, m) for label, app in apps.items() for m in app["models"]}
    placed: set[str] = set()
    sections = []
    for number, (name, wanted) in enumerate(SECTIONS, start=1):
        rows = [models[key] for key in wanted if key in models]
        placed.update(key for key in wanted if key in models)
        if rows:
            sections.append(_section(f"{number}. {name}", f"workflow-{number}", rows))
    rest = [models[key] for key in models if key not in placed and key.split(".")[0] not in ACCOUNT_APPS]
    if rest:
        sections.append(_section("Other", "workflow-other", sorted(rest, key=lambda r: r[1]["name"])))
    accounts = [models[key] for key in models if key.split(".")[0] in ACCOUNT_APPS]
    if accounts:
        sections.append(_section("Accounts and sign-in", "workflow-accounts", accounts))
    return sections


def _section(name: str, label: str, rows: list[tuple[dict, dict]]) -> dict:
    first_app = rows[0][0]
    return {
        "name": name,
        "app_label": label,
        "app_url": first_app["app_url"],
        "has_module_perms": True,
        "models": [model for _, model in rows],
    }


def install(site: AdminSite) -> None:
    site.get_app_list = MethodType(workflow_app_list, site)
