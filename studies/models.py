"""Studies, their ordered steps and the questions of questionnaire steps."""

import math
import secrets

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import RegexValidator
from django.db import models
from django.utils.translation import gettext_noop


def new_seed() -> int:
    return secrets.randbelow(2**31)


code_validator = RegexValidator(
    r"^[A-Za-z0-9_-]{1,40}$", "Use 1–40 letters, digits, '-' or '_' (as Prolific shows codes)."
)
key_validator = RegexValidator(
    r"^[a-z][a-z0-9_]{0,39}$", "Use a lowercase letter, then letters, digits or '_' (max 40)."
)


# What participants who leave early read (Prolific: a screen-out is paid a fixed amount when
# submitted with the screened-out code; failed attention checks may be rejected).
# Marked for the catalog (gettext_noop keeps them plain strings): a participant in another
# language reads the catalog's translation while the study keeps the default text
# (studies.texts.exit_message).
SCREENED_OUT_MESSAGE = gettext_noop(
    "Thank you for your answers. This study is looking for participants with a particular profile, "
    "and your answers show that you are not eligible for the rest of it. This is not a judgement of "
    "your answers, and you have done nothing wrong.\n\n"
    "What happens next: go back to Prolific with the button below. It submits your screen-out code, "
    "and you will receive the study's fixed screen-out payment for the time you spent. Please do not "
    "return the study: a returned submission is not paid."
)
FAILED_CHECK_MESSAGE = gettext_noop(
    "Some questions asked you to give a particular answer (attention checks). Too many of them were "
    "answered differently from what they asked, so the study has ended here.\n\n"
    "What happens next: go back to Prolific with the button below. It submits the failed-attention-"
    "check code. Prolific allows researchers to reject submissions that fail attention checks, so your "
    "submission may be rejected and not paid. If you would rather not have a rejection, you may return "
    "the study on Prolific instead (“Stop without completing”)."
)


class Study(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft (preview only)"
        LIVE = "live", "Live (accepting participants)"
        PAUSED = "paused", "Paused (participants in progress may finish)"
        CLOSED = "closed", "Closed"

    slug = models.SlugField(unique=True, help_text="Part of the study link: /s/SLUG/")
    title = models.CharField(max_length=200, help_text="Shown to participants.")
    language = models.CharField(
        max_length=10,
        choices=settings.LANGUAGES,
        default="en",
        help_text="The language of the study's texts and of participant pages. Each translation "
        "below adds a language participants may take the study in (chosen at entry: &lang= on "
        "the link, else the browser's languages, else this one).",
    )
    notes = models.TextField(blank=True, help_text="Internal notes, never shown.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.DRAFT)
    prolific_study_id = models.CharField(
        max_length=24,
        blank=True,
        help_text="Prolific's STUDY_ID. When set, links carrying another STUDY_ID are refused.",
    )

    completion_code = models.CharField(max_length=40, validators=[code_validator])
    failed_check_code = models.CharField(
        max_length=40, validators=[code_validator], help_text="FAILED_ATTENTION_CHECK code."
    )
    no_consent_code = models.CharField(
        max_length=40, validators=[code_validator], help_text="NO_CONSENT code."
    )
    screened_out_code = models.CharField(
        max_length=40, blank=True, validators=[code_validator], help_text="FIXED_SCREENOUT code."
    )
    screened_out_message = models.TextField(
        default=SCREENED_OUT_MESSAGE,
        blank=True,
        help_text="What a screened-out participant reads before going back to Prolific with the "
        "screened-out code (blank lines separate paragraphs; empty: the default).",
    )
    failed_check_message = models.TextField(
        default=FAILED_CHECK_MESSAGE,
        blank=True,
        help_text="What a participant who failed the attention checks reads before going back to "
        "Prolific with the failed-check code (blank lines separate paragraphs; empty: the default).",
    )

    estimated_minutes = models.PositiveSmallIntegerField(
        default=10, help_text="The completion time you state on Prolific."
    )
    time_limit_minutes = models.PositiveSmallIntegerField(
        default=0,
        blank=True,
        help_text="After this many minutes a participant's place is released. "
        "0 means Prolific's maximum allowed time for the estimate: 2 + X + 2·√X.",
    )
    attention_failures_to_end = models.PositiveSmallIntegerField(
        default=2,
        help_text="Failed attention checks that end the study with the failed-check code. "
        "Prolific: 1 may suffice under 5 minutes; 2 or more are needed from 5 minutes on. "
        "A participant who fails fewer finishes and is paid, but is excluded from analysis "
        "(reason: attention; reversible on their page).",
    )
    wpm_cap = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Reading speed (words per minute) at or above which a judge is excluded "
        "from analysis. Empty: no cap.",
    )
    target_per_item = models.PositiveIntegerField(
        default=6, help_text="Completed, non-excluded participants wanted per dialogue."
    )
    viewers = models.ManyToManyField(
        settings.AUTH_USER_MODEL,
        blank=True,
        related_name="viewable_studies",
        help_text="Staff who may see this study's data (overview, exports, reports, API) without "
        "the global 'Can view study' permission.",
    )
    seed = models.PositiveIntegerField(
        default=new_seed,
        help_text="Every random draw of the study (assignment ties, sides, check positions, display "
        "orders) comes from this seed, so a rerun with the same arrivals is the same. Set before "
        "going live; it is part of the frozen snapshot.",
    )
    exclusion_frees_place = models.BooleanField(
        default=True,
        help_text="An excluded participant's place goes to a new participant (the target counts "
        "analysable participants). Off: every completion counts, excluded or not (a fixed N paid).",
    )
    pilot = models.BooleanField(
        default=False,
        help_text="A pilot may run without a Prolific STUDY_ID and with the offline model. Never run a "
        "paid study as a pilot.",
    )
    analysis_plan = models.TextField(
        blank=True,
        help_text="The pre-registered analysis plan (or a link to it); frozen with the study at go-live.",
    )
    snapshot = models.JSONField(
        null=True, blank=True, editable=False, help_text="What the study was when it went live."
    )
    snapshot_sha256 = models.CharField(max_length=64, blank=True, editable=False)
    snapshot_at = models.DateTimeField(null=True, blank=True, editable=False)
    steps_version = models.PositiveIntegerField(default=1, editable=False)
    locked_at = models.DateTimeField(
        null=True,
        blank=True,
        editable=False,
        help_text="When the study was frozen: it went live, or a real participant entered.",
    )
    entered_at = models.DateTimeField(
        null=True, blank=True, editable=False, help_text="When the first real participant entered."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "studies"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        # With its slug: a duplicate has the original's title, and the two were told apart
        # nowhere (the sisters to exclude, a translation's or a step's study).
        return f"{self.title} ({self.slug})"

    @property
    def effective_time_limit_minutes(self) -> int:
        if self.time_limit_minutes:
            return self.time_limit_minutes
        return prolific_max_minutes(self.estimated_minutes)

    def clean(self) -> None:
        if self.time_limit_minutes and self.time_limit_minutes < self.estimated_minutes:
            raise ValidationError({"time_limit_minutes": "Must not be shorter than the estimate."})
        codes = [self.completion_code, self.failed_check_code, self.no_consent_code]
        codes += [self.screened_out_code] if self.screened_out_code else []
        if len(set(codes)) != len(codes):
            raise ValidationError("Each Prolific code must be different from the others.")


def prolific_max_minutes(estimated: int) -> int:
    """Prolific's maximum allowed time for an estimate of X minutes: 2 + X + 2·√X."""
    return math.ceil(2 + estimated + 2 * math.sqrt(estimated))


class Step(models.Model):
    """One page (or sequence of pages) of a study; `kind` names a registered step kind."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="steps")
    position = models.PositiveSmallIntegerField()
    kind = models.CharField(max_length=40)
    title = models.CharField(max_length=200, help_text="Heading shown to participants.")
    config = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["study", "position"]
        constraints = [models.UniqueConstraint(fields=["study", "position"], name="unique_step_position")]

    def __str__(self) -> str:
        return f"{self.position}. {self.title}"


class Question(models.Model):
    """An item of a questionnaire or attention-check step."""

    class Kind(models.TextChoices):
        SINGLE_CHOICE = "single_choice", "Single choice"
        LIKERT = "likert", "Likert scale"
        SLIDER = "slider", "Slider"
        NUMBER = "number", "Number"
        TEXT = "text", "Free text"

    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="questions")
    position = models.PositiveSmallIntegerField(default=0)
    key = models.CharField(
        max_length=40,
        validators=[key_validator],
        help_text="Column name in the export, unique within the study.",
    )
    kind = models.CharField(max_length=20, choices=Kind.choices)
    text = models.TextField(help_text="The question as participants see it.")
    help_text = models.CharField(max_length=300, blank=True)
    options = models.TextField(
        blank=True,
        help_text="Single choice and Likert: one option per line, in order. "
        "Slider: two lines, the labels of the two ends.",
    )
    required = models.BooleanField(default=True)
    specify_option = models.CharField(
        max_length=200,
        blank=True,
        help_text="Single choice: the option that opens a text box to describe the answer (e.g. "
        "'Prefer to self-describe' or 'Other'), stored as <key>_specify.",
    )
    min_value = models.IntegerField(null=True, blank=True, help_text="Number/slider minimum.")
    max_value = models.IntegerField(null=True, blank=True, help_text="Number/slider maximum.")
    min_length = models.PositiveIntegerField(default=0, help_text="Free text: minimum characters.")
    expected_answer = models.TextField(
        blank=True,
        help_text="Makes this item an attention check: the accepted answer(s), one per line, "
        "exactly as an option is written (or a number).",
    )

    class Meta:
        ordering = ["step", "position", "id"]
        constraints = [models.UniqueConstraint(fields=["step", "key"], name="unique_question_key_per_step")]

    def __str__(self) -> str:
        return self.key

    @property
    def option_list(self) -> list[str]:
        return [line.strip() for line in self.options.splitlines() if line.strip()]

    @property
    def expected_list(self) -> list[str]:
        return [line.strip() for line in self.expected_answer.splitlines() if line.strip()]

    @property
    def specify_key(self) -> str:
        """The response key of the text box the specify option opens."""
        return f"{self.key}_specify"

    @property
    def is_check(self) -> bool:
        return bool(self.expected_answer.strip())

    @property
    def answer_range(self) -> tuple[int | None, int | None]:
        """The numbers a slider or number item accepts (None: no bound; a slider is 0-100
        unless set): participants.forms builds its field from them."""
        if self.kind == self.Kind.SLIDER:
            return (
                0 if self.min_value is None else self.min_value,
                100 if self.max_value is None else self.max_value,
            )
        return self.min_value, self.max_value

    def unreachable_answers(self) -> list[str]:
        """Expected numbers no participant can give: outside the item's range."""
        if self.kind not in (self.Kind.SLIDER, self.Kind.NUMBER):
            return []
        low, high = self.answer_range
        out = []
        for answer in self.expected_list:
            try:
                number = int(answer)
            except ValueError:
                continue
            if (low is not None and number < low) or (high is not None and number > high):
                out.append(answer)
        return out

    def clean(self) -> None:
        options = self.option_list
        if self.kind in (self.Kind.SINGLE_CHOICE, self.Kind.LIKERT) and len(options) < 2:
            raise ValidationError({"options": "Give at least two options, one per line."})
        if len(set(options)) != len(options):
            raise ValidationError({"options": "Options must be different from each other."})
        if self.specify_option and (
            self.kind != self.Kind.SINGLE_CHOICE or self.specify_option not in options
        ):
            raise ValidationError(
                {"specify_option": "Must be one of the options of a single-choice item, exactly."}
            )
        if self.kind == self.Kind.SLIDER and len(options) not in (0, 2):
            raise ValidationError({"options": "A slider takes two end labels, or none."})
        low, high = self.min_value, self.max_value
        if low is not None and high is not None and low >= high:
            raise ValidationError({"max_value": "Must be greater than the minimum."})
        if self.is_check:
            self._clean_expected(options)

    def _clean_expected(self, options: list[str]) -> None:
        if self.kind in (self.Kind.SINGLE_CHOICE, self.Kind.LIKERT):
            unknown = [a for a in self.expected_list if a not in options]
            if unknown:
                raise ValidationError({"expected_answer": f"Not an option: {', '.join(unknown)}"})
        elif self.kind in (self.Kind.SLIDER, self.Kind.NUMBER):
            for answer in self.expected_list:
                try:
                    int(answer)
                except ValueError:
                    raise ValidationError({"expected_answer": f"Not a number: {answer}"}) from None
            if unreachable := self.unreachable_answers():
                low, high = self.answer_range
                bounds = (
                    f"from {'any number' if low is None else low} to {'any number' if high is None else high}"
                )
                wrong = ", ".join(unreachable)
                message = f"Outside the item's answers ({bounds}): {wrong}. No participant could give it."
                raise ValidationError({"expected_answer": message})
        else:
            raise ValidationError({"expected_answer": "Free-text items cannot be checks."})


class StudyTranslation(models.Model):
    """The study's own texts in another language; adding one offers the study in that
    language. An empty field falls back to the study's text (docs/translation.md)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="translations")
    language = models.CharField(max_length=10, choices=settings.LANGUAGES)
    title = models.CharField(max_length=200, blank=True)
    screened_out_message = models.TextField(blank=True)
    failed_check_message = models.TextField(blank=True)

    class Meta:
        ordering = ["study", "language"]
        constraints = [models.UniqueConstraint(fields=["study", "language"], name="unique_study_translation")]

    def __str__(self) -> str:
        return self.get_language_display()

    def clean(self) -> None:
        if self.study_id and self.language == self.study.language:
            raise ValidationError({"language": "This is the study's own language: edit the study's texts."})


class StepTranslation(models.Model):
    """A step's texts in another language: its title, the texts of its configuration
    (`texts["config"]`: name -> text) and of its items (`texts["questions"]`: key -> text,
    help_text, options). Edited as plain fields in the step's admin page."""

    step = models.ForeignKey(Step, on_delete=models.CASCADE, related_name="translations")
    language = models.CharField(max_length=10, choices=settings.LANGUAGES)
    title = models.CharField(max_length=200, blank=True)
    texts = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["step", "language"]
        constraints = [models.UniqueConstraint(fields=["step", "language"], name="unique_step_translation")]

    def __str__(self) -> str:
        return self.get_language_display()
