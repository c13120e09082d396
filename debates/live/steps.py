"""The claim-session step kind (study design B): judge a claim, talk with AI debaters or a
consultant, judge again. One step is one claim; add the step once per claim a participant
should judge."""

from __future__ import annotations

from django import forms
from django.conf import settings
from django.utils.translation import gettext as _

from debates import llm
from debates.live import services as live_services
from debates.live.services import LiveDesign, LiveError
from debates.live.tasks import turns_start
from debates.models import DebaterConfig, LiveSession, StudyClaim
from participants.forms import TEXT_MAX, SliderField
from participants.services import Answer, StaleSubmission, responses_record
from participants.steps import DebriefKind
from studies.registry import StepContext, StepKind, StepOutcome

Phase = LiveSession.Phase


def debater_choices() -> list[tuple[str, str]]:
    return [(c.name, f"{c.name} ({c.model})") for c in DebaterConfig.objects.all()]


class ClaimSessionConfig(forms.Form):
    protocols = forms.ChoiceField(
        choices=[
            ("both", "Debate and consultancy"),
            ("debate", "Debate only"),
            ("consultancy", "Consultancy only"),
        ],
        initial="both",
    )
    protocol_per = forms.ChoiceField(
        choices=[("participant", "One protocol per participant"), ("claim", "Chosen anew for each claim")],
        initial="participant",
        help_text="With several claim steps: keep a participant on one protocol, or balance per claim.",
    )
    rounds = forms.IntegerField(min_value=1, max_value=6, initial=3)
    consultant_side = forms.ChoiceField(
        choices=[("random", "Assigned at random"), ("preferred", "The consultant's preferred side")],
        initial="random",
    )
    correct_share = forms.FloatField(
        min_value=0,
        max_value=1,
        initial=0.5,
        help_text="Random assignment: the share of consultants on the true side.",
    )
    debater_a = forms.ChoiceField(choices=debater_choices, help_text="Debater configuration for debater A.")
    debater_b = forms.ChoiceField(choices=debater_choices, help_text="Debater configuration for debater B.")
    consultant = forms.ChoiceField(choices=debater_choices, help_text="Configuration for the consultant.")
    domain = forms.CharField(
        required=False, max_length=40, help_text="Only claims of this domain (optional)."
    )
    max_message_chars = forms.IntegerField(min_value=20, max_value=2000, initial=500)
    min_justification = forms.IntegerField(min_value=0, max_value=2000, initial=50)
    intro = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3}),
        initial="Read the claim. Is it true or false? Answer first with what you think now.",
    )


class JudgementForm(forms.Form):
    def __init__(self, *args, justification_min: int | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.fields["answer"] = forms.ChoiceField(
            label=_("Is the claim true or false?"),
            choices=[("true", _("True")), ("false", _("False"))],
            widget=forms.RadioSelect,
        )
        # As paper 001 asks it: confidence in one's own answer, 0-100 %, read as the
        # probability that the answer is right (the Brier score and calibration use it so).
        confidence = SliderField(
            label=_("How confident are you that your answer is correct?"),
            min_value=0,
            max_value=100,
            help_text=_("As a percentage: 100% means you are certain your answer is right."),
        )
        confidence.end_labels = [_("0% — not at all confident"), _("100% — completely confident")]
        self.fields["confidence"] = confidence
        if justification_min is not None:
            self.fields["justification"] = forms.CharField(
                label=_("Explain your answer in a few sentences."),
                min_length=justification_min or None,
                max_length=TEXT_MAX,
                widget=forms.Textarea(attrs={"rows": 5, "maxlength": TEXT_MAX}),
            )


class ChatDoneForm(forms.Form):
    pass


class ClaimSessionKind(StepKind):
    key = "claim_session"
    label = "Claim: debate or consultancy"
    description = (
        "Initial answer and confidence, then a live exchange with two AI debaters or one AI "
        "consultant, then the final answer, confidence and justification."
    )
    template = "debates/steps/claim_session.html"
    config_form = ClaimSessionConfig
    multi_page = True

    def design(self, step) -> LiveDesign:
        c = self.config(step)
        protocols = ("debate", "consultancy") if c["protocols"] == "both" else (c["protocols"],)
        return LiveDesign(
            protocols=protocols,
            per_participant=c["protocol_per"] == "participant",
            rounds=int(c["rounds"]),
            consultant_side=c["consultant_side"],
            correct_share=float(c["correct_share"]),
            debater_a=c["debater_a"],
            debater_b=c["debater_b"],
            consultant=c["consultant"],
            max_message_chars=int(c["max_message_chars"]),
            domain=c.get("domain") or "",
        )

    def check_study(self, study, step, steps) -> list[str]:
        problems = []
        if not StudyClaim.objects.filter(study=study, active=True).exists():
            problems.append("the study has no active claims (add them under Study claims).")
        names = set(DebaterConfig.objects.values_list("name", flat=True))
        config = self.config(step)
        roles = {"debater_a": "debater A", "debater_b": "debater B", "consultant": "the consultant"}
        for field, role in roles.items():
            if config.get(field) not in names:
                problems.append(f'there is no debater configuration called "{config.get(field)}" for {role}.')
        claims = StudyClaim.objects.filter(study=study, active=True)
        domain = config.get("domain") or ""
        if domain and not claims.filter(claim__domain=domain).exists():
            problems.append(f'no active claim of the study is in the domain "{domain}".')
        sessions = [s for s in steps if s.kind == self.key]
        available = claims.count()
        if sessions and step is sessions[-1] and 0 < available < len(sessions):
            problems.append(
                f"the study has {len(sessions)} claim steps but only {available} active claims, and each "
                "participant needs a different claim in each step."
            )
        if llm.backend_name() == llm.OFFLINE and not study.pilot:
            problems.append(
                "the live debaters would be the offline stand-in, not a language model (the server runs "
                "with LLM_BACKEND=offline): configure a model, or mark the study as a pilot."
            )
        return problems

    def session(self, ctx: StepContext) -> LiveSession:
        return live_services.live_session_for(ctx, self.design(ctx.step))

    def context(self, ctx: StepContext) -> dict:
        session = self.session(ctx)
        return {
            "session": session,
            "claim": session.claim,
            "phase": session.phase,
            "ws_path": f"/ws/live/{ctx.participant.token}/",
            "speakers": session.ai_speakers,
            "quiet_seconds": settings.LIVE_RESYNC_QUIET_S,
        }

    def build_form(self, ctx: StepContext, data=None) -> forms.Form:
        session = self.session(ctx)
        if session.phase == Phase.INITIAL:
            form = JudgementForm(data=data)
        elif session.phase == Phase.CHAT:
            form = ChatDoneForm(data=data)
        else:
            form = JudgementForm(data=data, justification_min=self.config(ctx.step)["min_justification"])
        if data is not None and data.get("_phase") != session.phase:
            raise StaleSubmission()  # a page of this step that is no longer current
        return form

    def submit(self, ctx: StepContext, form: forms.Form) -> StepOutcome | None:
        session = self.session(ctx)
        data = form.cleaned_data
        ctx.stay = True
        if session.phase == Phase.INITIAL:
            first = live_services.live_initial_record(
                session=session, answer=data["answer"] == "true", confidence=data["confidence"], now=ctx.now
            )
            turns_start([first])
        elif session.phase == Phase.CHAT:
            try:
                live_services.live_chat_finish(session=session, now=ctx.now)
            except LiveError:
                raise StaleSubmission() from None  # not finished: show the conversation again
        else:
            live_services.live_final_record(
                session=session,
                answer=data["answer"] == "true",
                confidence=data["confidence"],
                justification=data["justification"],
                now=ctx.now,
            )
            self._record_answers(ctx, session)
            ctx.stay = False
        return None

    def _record_answers(self, ctx: StepContext, session: LiveSession) -> None:
        session.refresh_from_db()
        slug = session.claim.slug
        yes_no = {True: "true", False: "false", None: ""}
        responses_record(
            ctx=ctx,
            answers=[
                Answer(key=f"claim_{slug}_initial", value=yes_no[session.initial_answer]),
                Answer(
                    key=f"claim_{slug}_initial_confidence",
                    value=str(session.initial_confidence),
                    value_num=session.initial_confidence,
                ),
                Answer(key=f"claim_{slug}_final", value=yes_no[session.final_answer]),
                Answer(
                    key=f"claim_{slug}_final_confidence",
                    value=str(session.final_confidence),
                    value_num=session.final_confidence,
                ),
                Answer(key=f"claim_{slug}_justification", value=session.justification),
            ],
        )


class ClaimDebriefKind(DebriefKind):
    key = "claim_debrief"
    label = "Debrief with the claims' answers"
    description = "The closing text and, for each claim the participant judged, its correct answer."
    template = "debates/steps/claim_debrief.html"

    def context(self, ctx: StepContext) -> dict:
        sessions = LiveSession.objects.filter(participant=ctx.participant).select_related("claim")
        return {**super().context(ctx), "judged": [s.claim for s in sessions.order_by("position")]}
