"""The part of a study's codebook that is its own: what each `key` of the responses table
means for this study (its questionnaire items, and the fixed keys its step kinds store)."""

from __future__ import annotations

from collections.abc import Iterator

from studies.models import Question, Study
from studies.services import study_steps

# Keys stored by the step kinds themselves (not questionnaire items), per step kind.
KIND_KEYS = {
    "consent": [("consent", "yes if the participant agreed to take part, no if they declined.")],
    "judgement": [
        ("judgement_side", "The side chosen as arguing for the true culprit: A or B."),
        ("judgement_confidence", "Confidence in that choice, 0-100 (value_num)."),
        ("judgement_reasoning", "The participant's reasoning (free text)."),
    ],
    "bias_detection": [
        ("bias_present", "Was a side argued manipulatively? yes, no or unsure."),
        ("bias_side", "If yes: A, B or unsure (empty otherwise)."),
        ("bias_type", "If yes: the slug of the condition the participant named, or other."),
    ],
    "recall_check": [("recall", "The answer to the recall question (a check: passed is 1 when right).")],
    "screening": [
        ("screening_score", "Mean of the belief items (reversed items flipped), value_num."),
        ("screening_group", "The group the score placed the participant in, or ineligible."),
    ],
    "claim_session": [
        ("claim_<slug>_initial", "The answer before the protocol for claim <slug>: true or false."),
        ("claim_<slug>_initial_confidence", "Confidence before, 0-100 (value_num)."),
        ("claim_<slug>_final", "The answer after the protocol: true or false."),
        ("claim_<slug>_final_confidence", "Confidence after, 0-100 (value_num)."),
        ("claim_<slug>_justification", "The participant's written justification."),
    ],
}


def study_items(study: Study) -> Iterator[tuple[str, str]]:
    """(key, description) of every item this study's steps store, in step order."""
    seen: set[str] = set()
    for step in study_steps(study):
        where = f"Step {step.position} ({step.title!r}, {step.kind})"
        for key, meaning in KIND_KEYS.get(step.kind, []):
            if key not in seen:
                seen.add(key)
                yield key, f"{where}: {meaning}"
        for question in step.questions.all():
            yield question.key, f"{where}: {question_description(question)}"
            if question.specify_option:
                opened_by = f"the box {question.specify_option!r} of {question.key!r} opens"
                described = f"{where}: free text: what the participant wrote in {opened_by}"
                yield question.specify_key, f"{described}; stored only when that option was chosen."


def question_description(q: Question) -> str:
    parts = [f"{q.get_kind_display()}: {q.text!r}"]
    options = q.option_list
    if q.kind == Question.Kind.LIKERT:
        coding = "; ".join(f"{n} = {option}" for n, option in enumerate(options, start=1))
        parts.append(f"value is the option, value_num its position: {coding}")
    elif q.kind == Question.Kind.SINGLE_CHOICE:
        parts.append("value is the option chosen: " + "; ".join(options))
    elif q.kind in (Question.Kind.SLIDER, Question.Kind.NUMBER):
        low, high = q.answer_range
        ends = f" ({options[0]!r} to {options[1]!r})" if len(options) == 2 else ""
        parts.append(f"value and value_num are the number, {low} to {high}{ends}")
    else:
        parts.append("free text" + (f", at least {q.min_length} characters" if q.min_length else ""))
    if not q.required:
        parts.append("optional (empty when skipped)")
    if q.is_check:
        parts.append("attention check, passed when the answer is one of: " + "; ".join(q.expected_list))
    return ". ".join(parts) + "."
