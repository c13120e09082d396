"""The persuasion-dialogue step kind (study design C): the participant debates an AI agent,
or another participant from the waiting room, under Prakken's protocol, until a side wins,
the turn or time limit makes it a draw, or the dialogue is abandoned."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.db import transaction
from django.utils.translation import gettext

from debates import llm
from debates.models import AgentConfig, PersuasionDialogue, Topic
from debates.persuasion import services
from debates.persuasion.realtime import CHANGED, broadcast
from debates.persuasion.services import PersuasionDesign
from debates.persuasion.tasks import turns_start
from participants.models import Participant
from participants.services import Answer, StaleSubmission, responses_record
from studies.registry import StepContext, StepKind, StepOutcome

Status = PersuasionDialogue.Status
Reason = PersuasionDialogue.Reason


def topic_choices() -> list[tuple[str, str]]:
    return [(t.slug, f"{t.slug}: {t.text[:60]}") for t in Topic.objects.all()]


def agent_choices() -> list[tuple[str, str]]:
    return [(a.name, f"{a.name} ({a.model})") for a in AgentConfig.objects.all()]


class PersuasionConfig(forms.Form):
    topic = forms.ChoiceField(choices=topic_choices)
    opponent = forms.ChoiceField(
        choices=[("ai", "An AI agent"), ("human", "Another participant (waiting room)")], initial="ai"
    )
    agent = forms.ChoiceField(
        choices=agent_choices,
        help_text="The AI opponent; with another participant as opponent, who stands in when nobody comes.",
    )
    side = forms.ChoiceField(
        choices=[
            ("balanced", "Balanced at random"),
            ("pro", "Always for the topic"),
            ("con", "Always against"),
        ],
        initial="balanced",
        help_text="The participant's side (with another participant: the first to arrive's side).",
    )
    max_turns = forms.IntegerField(
        min_value=2, max_value=200, initial=40, help_text="Then a draw (paper: 40)."
    )
    max_minutes = forms.IntegerField(
        min_value=1, max_value=180, initial=30, help_text="Then a draw (paper: 30)."
    )
    max_sentences = forms.IntegerField(min_value=1, max_value=5, initial=5, help_text="Per turn (paper: 5).")
    silence_seconds = forms.IntegerField(
        min_value=30,
        max_value=3600,
        initial=300,
        help_text="A participant silent this long on their turn abandons the dialogue.",
    )
    wait_seconds = forms.IntegerField(
        min_value=10, max_value=3600, initial=180, help_text="Longest wait for a partner in the waiting room."
    )
    no_partner = forms.ChoiceField(
        choices=[("ai", "Debate the AI agent instead"), ("exit", "Leave politely with the no-partner code")],
        initial="ai",
    )
    tell_stand_in = forms.BooleanField(
        required=False,
        initial=True,
        label="Tell the participant when the AI takes the empty seat",
        help_text="With another participant as opponent and 'Debate the AI agent instead': the dialogue page "
        "says that nobody joined and the opponent is an AI system. Turn off only where your ethics approval "
        "covers not telling them (then say it in the debrief).",
    )
    no_partner_code = forms.CharField(
        required=False, max_length=40, help_text="Completion code when nobody came (with 'leave politely')."
    )
    partner_left_code = forms.CharField(
        required=False,
        max_length=40,
        help_text="Completion code for a participant whose partner left or fell silent (empty: the study's "
        "completion code, and the study goes on).",
    )
    delay_min_s = forms.FloatField(
        min_value=0, max_value=120, initial=0, help_text="The AI's reply waits a random time from this…"
    )
    delay_max_s = forms.FloatField(min_value=0, max_value=120, initial=0, help_text="…to this many seconds.")
    classifier_model = forms.CharField(
        max_length=120, initial="gpt-4o", help_text="The model that classifies sentences (paper: GPT-4o)."
    )
    intro = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        initial="You will debate the topic below. Try to persuade your opponent: you win if they concede "
        "your initial claim or retract their own.",
    )

    def clean(self):
        data = super().clean()
        if data.get("delay_min_s") is not None and data.get("delay_max_s") is not None:
            if data["delay_max_s"] < data["delay_min_s"]:
                self.add_error("delay_max_s", "The longest delay must be at least the shortest.")
        if (
            data.get("no_partner") == "exit"
            and data.get("opponent") == "human"
            and not data.get("no_partner_code")
        ):
            self.add_error("no_partner_code", "Give the code participants leave with when nobody comes.")
        return data


class ContinueForm(forms.Form):
    pass


def wait_text(seconds: int) -> str:
    """The longest wait for a partner, in the participant's language ("3 minutes")."""
    if seconds >= 120:
        return gettext("%(n)s minutes") % {"n": round(seconds / 60)}
    return gettext("%(n)s seconds") % {"n": seconds}


class PersuasionKind(StepKind):
    key = "persuasion_dialogue"
    label = "Persuasion dialogue"
    description = (
        "A formal persuasion dialogue (Prakken's protocol) about a topic, against an AI agent or "
        "another participant, until a side concedes or retracts, or the turn or time limit is reached."
    )
    template = "debates/steps/persuasion.html"
    config_form = PersuasionConfig
    multi_page = True

    def design(self, step) -> PersuasionDesign:
        c = self.config(step)
        return PersuasionDesign(
            topic=c["topic"],
            opponent=c["opponent"],
            agent=c["agent"],
            side=c["side"],
            max_turns=int(c["max_turns"]),
            max_seconds=int(c["max_minutes"]) * 60,
            max_sentences=int(c["max_sentences"]),
            silence_seconds=int(c["silence_seconds"]),
            wait_seconds=int(c["wait_seconds"]),
            no_partner=c["no_partner"],
            delay_min_s=float(c["delay_min_s"]),
            delay_max_s=float(c["delay_max_s"]),
            classifier_model=c["classifier_model"],
        )

    def check_study(self, study, step, steps) -> list[str]:
        config = self.config(step)
        problems = []
        if not Topic.objects.filter(slug=config.get("topic")).exists():
            problems.append(f'there is no topic called "{config.get("topic")}" (add it under Topics).')
        if not AgentConfig.objects.filter(name=config.get("agent")).exists():
            problems.append(f'there is no agent configuration called "{config.get("agent")}".')
        if llm.backend_name() == llm.OFFLINE and not study.pilot:
            problems.append(
                "the AI opponent and the sentence classifier would be the offline stand-in, not a language "
                "model (the server runs with LLM_BACKEND=offline): configure a model, or mark the study as a "
                "pilot."
            )
        if config.get("opponent") == "human" and study.effective_time_limit_minutes * 60 < int(
            config.get("wait_seconds", 0)
        ):
            problems.append("the wait for a partner is longer than the study's time limit.")
        return problems

    def dialogue(self, ctx: StepContext) -> PersuasionDialogue:
        design = self.design(ctx.step)
        dialogue = ctx.extra.get("persuasion_dialogue")
        if dialogue is None:
            before = services.dialogue_of(ctx.participant, ctx.position)
            if before is None:
                due = services.dialogue_assign(
                    participant=ctx.participant, position=ctx.position, design=design, now=ctx.now
                )
                turns_start([due])
            dialogue = services.dialogue_for(ctx, design)
            if before is None and dialogue.pairing == "human_human" and dialogue.status == Status.RUNNING:
                # The partner waiting on their page learns at once that someone came.
                transaction.on_commit(lambda pk=dialogue.pk: broadcast(pk, CHANGED))
        if dialogue.status == Status.WAITING and services.waiting_until(dialogue, design) <= ctx.now:
            turns_start([services.waiting_resolve(dialogue_id=dialogue.pk, design=design, now=ctx.now)])
            transaction.on_commit(lambda pk=dialogue.pk: broadcast(pk, CHANGED))
            dialogue = services.dialogue_of(ctx.participant, ctx.position)
            ctx.extra["persuasion_dialogue"] = dialogue
        return dialogue

    def context(self, ctx: StepContext) -> dict:
        dialogue = self.dialogue(ctx)
        side = dialogue.side_of(ctx.participant.pk)
        design = self.design(ctx.step)
        return {
            "dialogue": dialogue,
            "topic": dialogue.topic,
            "side": side,
            "own_claim": dialogue.topic.claim_of(side),
            "other_claim": dialogue.topic.claim_of("con" if side == "pro" else "pro"),
            "ended": dialogue.status in (Status.FINISHED, Status.ABANDONED),
            "outcome": services.outcome_text(dialogue, side),
            "turns": services.turns_of(dialogue),
            "ws_path": f"/ws/persuasion/{ctx.participant.token}/",
            "wait_seconds": design.wait_seconds,
            "quiet_seconds": settings.LIVE_RESYNC_QUIET_S,
            "wait_minutes": wait_text(design.wait_seconds),
            "waiting": dialogue.status == Status.WAITING,
            # A stand-in the participant is told about; the page shows it once the AI takes the seat.
            "stand_in_notice": design.opponent == "human"
            and design.no_partner == "ai"
            and bool(self.config(ctx.step).get("tell_stand_in")),
        }

    def build_form(self, ctx: StepContext, data=None) -> forms.Form:
        return ContinueForm(data=data)

    def submit(self, ctx: StepContext, form: forms.Form) -> StepOutcome | None:
        dialogue = self.dialogue(ctx)
        if dialogue.status not in (Status.FINISHED, Status.ABANDONED):
            services.dialogue_check(dialogue_id=dialogue.pk, now=ctx.now)
            dialogue = services.dialogue_of(ctx.participant, ctx.position)
            if dialogue.status not in (Status.FINISHED, Status.ABANDONED):
                raise StaleSubmission()  # not over yet: show the dialogue again
        side = dialogue.side_of(ctx.participant.pk)
        config = self.config(ctx.step)
        responses_record(
            ctx=ctx,
            answers=[
                Answer(key="persuasion_side", value=side),
                Answer(key="persuasion_outcome", value=self._outcome_of(dialogue, side)),
                Answer(
                    key="persuasion_turns", value=str(dialogue.turns_played), value_num=dialogue.turns_played
                ),
            ],
        )
        if dialogue.status == Status.ABANDONED and dialogue.ended_by and dialogue.ended_by != side:
            code = (
                config.get("no_partner_code") if dialogue.end_reason == Reason.NO_PARTNER else None
            ) or config.get("partner_left_code")
            if code:
                return StepOutcome(
                    end_status=Participant.Status.COMPLETED, detail=dialogue.end_reason, code=code
                )
        return None

    @staticmethod
    def _outcome_of(dialogue: PersuasionDialogue, side: str) -> str:
        if dialogue.status == Status.ABANDONED:
            return "abandoned"
        if not dialogue.winner:
            return "draw"
        return "won" if dialogue.winner == side else "lost"
