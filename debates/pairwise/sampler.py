"""Design D's instance sets: excerpts of debates and the seeded sampler (paper 003 §5 and
appendix D).

- Excerpts: k consecutive turns of a debate, seen from one side, which becomes Speaker A.
- The sampler: for every unordered pair of interlocutors, m instances, half with Speaker A
  on each stance, each pairing excerpts of two different debates, drawn without
  replacement with a seed (the same seed rebuilds the same set).
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field
from itertools import combinations

from django.db import transaction

from debates.models import Comparison, Dialogue, Excerpt, Instance, InstanceSet


@dataclass(frozen=True)
class ExcerptSpec:
    key: str
    debate: str
    speaker_a: str
    speaker_b: str
    stance: str
    turns: tuple
    topic: str = ""


@dataclass
class Sample:
    pairs: list[tuple[ExcerptSpec, ExcerptSpec, str]] = field(default_factory=list)
    shortfalls: list[dict] = field(default_factory=list)


# --- Excerpts ----------------------------------------------------------------------------


def dialogue_interlocutor(dialogue: Dialogue, side: str) -> str:
    """Who speaks for a side of a pre-generated dialogue: the bias intervention it carries
    (anchoring, verbosity, …), or the plain debater, 'baseline'."""
    return dialogue.condition if dialogue.active_side_letter == side else "baseline"


def dialogue_excerpts(dialogues: list[Dialogue], k: int) -> list[ExcerptSpec]:
    """Every window of k consecutive turns that opens with the focused side, from both
    sides' points of view: the focused side is relabelled Speaker A."""
    specs = []
    for d in sorted(dialogues, key=lambda d: d.slug):
        turns = list(d.turns.order_by("number"))
        for focus, other in (("A", "B"), ("B", "A")):
            stance = d.side_a if focus == "A" else d.side_b
            for start in range(len(turns) - k + 1):
                window = turns[start : start + k]
                if window[0].speaker != focus:
                    continue
                relabelled = tuple(
                    {"speaker": "A" if t.speaker == focus else "B", "text": t.text} for t in window
                )
                specs.append(
                    ExcerptSpec(
                        key=f"dialogue:{d.slug}:{focus}:{window[0].number}",
                        debate=f"dialogue:{d.slug}",
                        speaker_a=dialogue_interlocutor(d, focus),
                        speaker_b=dialogue_interlocutor(d, other),
                        stance=str(stance),
                        turns=relabelled,
                        topic=d.case.title,
                    )
                )
    return specs


def live_excerpts(sessions, k: int) -> list[ExcerptSpec]:
    """Excerpts of finished live debates (design B): the debaters' turns without the
    judge's, each debater's configuration as its interlocutor id, its side as its stance."""
    specs = []
    for session in sorted(sessions, key=lambda s: s.pk):
        if session.protocol != "debate":
            continue
        turns = list(session.turns.filter(status="done").exclude(speaker="J").order_by("seq"))
        names = {"A": session.debater_a.name, "B": session.debater_b.name}
        for focus, other in (("A", "B"), ("B", "A")):
            for start in range(len(turns) - k + 1):
                window = turns[start : start + k]
                if window[0].speaker != focus:
                    continue
                specs.append(
                    ExcerptSpec(
                        key=f"live:{session.pk}:{focus}:{window[0].seq}",
                        debate=f"live:{session.pk}",
                        speaker_a=names[focus],
                        speaker_b=names[other],
                        stance=session.side_of(focus),
                        turns=tuple(
                            {"speaker": "A" if t.speaker == focus else "B", "text": t.text} for t in window
                        ),
                        topic=session.claim.text,
                    )
                )
    return specs


def persuasion_excerpts(dialogues, k: int) -> list[ExcerptSpec]:
    """Excerpts of finished model-versus-model persuasion dialogues (design C): each agent
    configuration is its interlocutor id (as in the logical ranking), its side (for or
    against the topic) its stance."""
    specs = []
    for dialogue in sorted(dialogues, key=lambda d: d.pk):
        if dialogue.pro_agent is None or dialogue.con_agent is None:
            continue
        turns = list(dialogue.turns.filter(status="done").order_by("seq"))
        names = {"pro": dialogue.pro_agent.name, "con": dialogue.con_agent.name}
        for focus, other in (("pro", "con"), ("con", "pro")):
            for start in range(len(turns) - k + 1):
                window = turns[start : start + k]
                if window[0].speaker != focus:
                    continue
                specs.append(
                    ExcerptSpec(
                        key=f"persuasion:{dialogue.pk}:{focus}:{window[0].seq}",
                        debate=f"persuasion:{dialogue.pk}",
                        speaker_a=names[focus],
                        speaker_b=names[other],
                        stance=f"{dialogue.topic.slug}:{focus}",
                        turns=tuple(
                            {"speaker": "A" if t.speaker == focus else "B", "text": t.text} for t in window
                        ),
                        topic=dialogue.topic.text,
                    )
                )
    return specs


# --- The sampler -------------------------------------------------------------------------


def sample_instances(excerpts: list[ExcerptSpec], per_pair: int, seed: int) -> Sample:
    rng = random.Random(seed)  # noqa: S311 (reproducible sampling, not security)
    by = defaultdict(list)
    for e in sorted(excerpts, key=lambda e: e.key):
        by[(e.speaker_a, e.stance)].append(e)
    interlocutors = sorted({e.speaker_a for e in excerpts})
    stances = sorted({e.stance for e in excerpts})
    sample = Sample()
    for x, y in combinations(interlocutors, 2):
        wanted = _per_stance(per_pair, stances, rng)
        for stance in stances:
            candidates = [(a, b) for a in by[(x, stance)] for b in by[(y, stance)] if a.debate != b.debate]
            rng.shuffle(candidates)
            chosen = candidates[: wanted[stance]]
            if len(chosen) < wanted[stance]:
                sample.shortfalls.append(
                    {"pair": [x, y], "stance": stance, "wanted": wanted[stance], "found": len(chosen)}
                )
            for a, b in chosen:
                sample.pairs.append((a, b, stance) if rng.random() < 0.5 else (b, a, stance))
    return sample


def _per_stance(per_pair: int, stances: list[str], rng: random.Random) -> dict[str, int]:
    """Split m over the stances as evenly as possible (an odd m: a seeded stance gets one more)."""
    base, extra = divmod(per_pair, len(stances)) if stances else (0, 0)
    lucky = set(rng.sample(stances, extra))
    return {s: base + (1 if s in lucky else 0) for s in stances}


@transaction.atomic
def instance_set_build(*, instance_set: InstanceSet, excerpts: list[ExcerptSpec]) -> Sample:
    """(Re)build a set's instances from excerpts; refused once annotators have used it."""
    if Comparison.objects.filter(instance__instance_set=instance_set).exists():
        raise ValueError("Annotators have already seen this set; build a new set instead.")
    Instance.objects.filter(instance_set=instance_set).delete()
    Excerpt.objects.filter(instance_set=instance_set).delete()
    sample = sample_instances(excerpts, instance_set.per_pair, instance_set.seed)
    stored = {}
    for spec in {e.key: e for e in excerpts}.values():
        stored[spec.key] = Excerpt.objects.create(
            instance_set=instance_set,
            key=spec.key,
            debate=spec.debate,
            topic=spec.topic,
            speaker_a=spec.speaker_a,
            speaker_b=spec.speaker_b,
            stance=spec.stance,
            turns=list(spec.turns),
        )
    Instance.objects.bulk_create(
        Instance(
            instance_set=instance_set,
            number=n,
            excerpt_1=stored[a.key],
            excerpt_2=stored[b.key],
            stance=stance,
            interlocutor_1=a.speaker_a,
            interlocutor_2=b.speaker_a,
        )
        for n, (a, b, stance) in enumerate(sample.pairs, start=1)
    )
    InstanceSet.objects.filter(pk=instance_set.pk).update(shortfalls=sample.shortfalls)
    instance_set.shortfalls = sample.shortfalls
    return sample


def instance_set_from_dialogues(*, instance_set: InstanceSet, dialogues: list[Dialogue]) -> Sample:
    return instance_set_build(
        instance_set=instance_set, excerpts=dialogue_excerpts(dialogues, instance_set.excerpt_turns)
    )
