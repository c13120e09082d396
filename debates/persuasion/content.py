"""Design C's content as studies use it: which running studies lock a topic or an agent
configuration, new versions of them, and their part of a study's frozen snapshot."""

from __future__ import annotations

from django.db import transaction
from django.db.models import QuerySet

from debates.models import AgentConfig, Topic
from debates.versions import next_version
from studies.models import Study
from studies.snapshot import digest

KIND = "persuasion_dialogue"
TOPIC_FIELDS = ("slug", "text", "pro_claim", "con_claim", "background")
AGENT_FIELDS = ("name", "model", "persona", "temperature", "max_tokens", "seed", "prompt_template")


def topic_studies(topic: Topic) -> QuerySet[Study]:
    """Studies with real participants whose persuasion steps debate this topic."""
    return Study.objects.filter(
        locked_at__isnull=False, steps__kind=KIND, steps__config__topic=topic.slug
    ).distinct()


def agent_studies(agent: AgentConfig) -> QuerySet[Study]:
    """Studies with real participants whose persuasion steps name this agent."""
    return Study.objects.filter(
        locked_at__isnull=False, steps__kind=KIND, steps__config__agent=agent.name
    ).distinct()


@transaction.atomic
def topic_new_version(*, topic: Topic) -> Topic:
    copy = Topic.objects.get(pk=topic.pk)
    copy.pk, copy.slug = None, next_version(Topic, "slug", topic.slug)
    copy.save()
    return copy


@transaction.atomic
def agent_new_version(*, agent: AgentConfig) -> AgentConfig:
    """A copy under a new name (steps and batches name their agents)."""
    copy = AgentConfig.objects.get(pk=agent.pk)
    copy.pk, copy.name, copy.template_version = None, next_version(AgentConfig, "name", agent.name), 1
    copy.save()
    return copy


def snapshot_part(study: Study) -> tuple[str, dict]:
    """For the study's frozen snapshot: the topics and agents its steps name, by content hash."""
    steps = list(study.steps.filter(kind=KIND))
    topics = {step.config.get("topic") for step in steps}
    agents = {step.config.get("agent") for step in steps}
    return "persuasion", {
        "topics": [
            {"slug": t.slug, "sha256": digest({f: getattr(t, f) for f in TOPIC_FIELDS})}
            for t in Topic.objects.filter(slug__in=topics).order_by("slug")
        ],
        "agents": [
            {
                "name": a.name,
                "template_version": a.template_version,
                "sha256": digest({f: getattr(a, f) for f in AGENT_FIELDS}),
            }
            for a in AgentConfig.objects.filter(name__in=agents).order_by("name")
        ],
    }
