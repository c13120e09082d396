"""Seeded synthetic data with known effects in the platform's CSV export format.

Every cell is text, "" for empty, flags "1"/"0"/"". For the tests and the benchmarks:

- `synthetic_a`: design A judgements whose side-A choice follows
  logit P(A) = intercept + slope_k * signed_active_side;
- `synthetic_b`: design B claim judgements whose final correctness follows a random-intercept
  logistic model in protocol, belief group and their interaction;
- `synthetic_d`: design D comparisons whose winners follow Bradley–Terry strengths, with ties.

Each returns {table name: DataFrame} with some dropouts, failed attention checks, excluded
participants and empty cells, like a real export.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy.special import expit

from analysis.metrics.frames import SCHEMAS

CASES = (("quarterback", "culprit"), ("necklace", "culprit"), ("briefcase", "rival"), ("leprechaun", "rival"))
BIASES = ("anchoring", "fallacy_oversight", "pro_jargon", "verbosity")
FAMILIARITY = ("Not at all", "Slightly", "Moderately", "Very", "Extremely")
GENDERS = ("Woman", "Man", "Non-binary", "Prefer not to say")
LEANINGS = ("Left", "Centre", "Right", "Prefer not to say")
REASONS = (
    'Side A was more convincing, "clearly".',
    "The timeline, the alibi and the locker:\nall point one way.",
    "=gut feeling",
    "NA",
    "",
)
PAPER_INTERLOCUTORS = (
    "GPT-4o_MAS_RAG",
    "Grok-3_MAS_RAG",
    "GPT-4o_BASE",
    "Grok-3_MAS",
    "GPT-4o_MAS",
    "Mistral-Medium_MAS_RAG",
    "Mistral-Medium_MAS",
    "Mistral-Medium_BASE",
    "Grok-3_BASE",
) + tuple(f"Human_{i}" for i in range(1, 14))


def _text(value) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, bool | np.bool_):
        return "1" if value else "0"
    if isinstance(value, float | np.floating) and float(value).is_integer():
        return str(int(value))
    return str(value)


def _frame(table: str, rows: list[dict], study: str | None) -> pd.DataFrame:
    columns = [c for c in SCHEMAS[table] if c != "study"]
    if study is not None:
        columns = ["study"] + columns
    data = {c: [_text(r.get(c, study if c == "study" else None)) for r in rows] for c in columns}
    return pd.DataFrame(data, columns=columns, dtype=object).astype(str)


def _iso(base: pd.Timestamp, seconds: float) -> str:
    return (base + pd.Timedelta(milliseconds=round(float(seconds) * 1000))).isoformat()


_BASE = pd.Timestamp("2026-03-02T09:00:00+00:00")


def _fate(rng: np.random.Generator, rates: dict[str, float]) -> str:
    """One of "ok", "dropout", "attention", "recall", "wpm", "manual" by the given rates."""
    names = ["dropout", "attention", "recall", "wpm", "manual"]
    p = [rates.get(n, 0.0) for n in names]
    u = rng.random()
    for name, share in zip(names, np.cumsum(p)):
        if u < share:
            return name
    return "ok"


def _participant_row(pid: int, fate: str, rng: np.random.Generator, start: float) -> dict:
    status = {
        "dropout": str(rng.choice(["returned", "timed_out", "active"])),
        "attention": "failed_check",
    }.get(fate, "completed")
    reasons = {"attention": "attention", "recall": "recall", "wpm": "wpm", "manual": "manual"}.get(fate, "")
    if fate == "ok" and rng.random() < 0.02:
        reasons, fate = "attention", "attention_completed"  # failed one check but finished
    finished = status in ("completed", "failed_check", "returned", "timed_out")
    duration = float(rng.uniform(300, 1500))
    return {
        "participant_id": pid,
        "prolific_pid": f"PID{pid:06d}{rng.integers(1000, 9999)}",
        "prolific_study_id": "STUDY1",
        "prolific_session_id": f"S{pid:06d}",
        "status": status,
        "position": 9 if status == "completed" else int(rng.integers(2, 8)),
        "step_title": "Your judgement" if status == "active" else "",
        "started_at": _iso(_BASE, start),
        "finished_at": _iso(_BASE, start + duration) if finished else "",
        "duration_s": round(duration, 1) if finished else "",
        "last_seen_at": _iso(_BASE, start + duration),
        "expires_at": _iso(_BASE, start + 3600),
        "visits": int(rng.integers(1, 3)),
        "attention_failures": 1 if "attention" in reasons else 0,
        "excluded": bool(reasons),
        "exclusion_reasons": reasons,
        "user_agent": str(rng.choice(["Mozilla/5.0 (iPhone)", "Mozilla/5.0 (Windows NT 10.0)", ""])),
        "_fate": fate,
    }


def _response(
    pid: int,
    position: int,
    kind: str,
    key: str,
    value,
    value_num=None,
    check=None,
    passed=None,
    when: str = "",
) -> dict:
    return {
        "participant_id": pid,
        "prolific_pid": "",
        "position": position,
        "step_kind": kind,
        "key": key,
        "value": value,
        "value_num": value_num,
        "is_check": check is True,
        "passed": passed,
        "created_at": when,
    }


DEFAULT_RATES_A = {"dropout": 0.04, "attention": 0.04, "recall": 0.01, "wpm": 0.07, "manual": 0.01}


def dialogue_inventory() -> list[dict]:
    """The 68 dialogues of design A: 4 cases × (baseline + 4 biases × side A/B × V1/V2)."""
    out = []
    for c, (case, side_a) in enumerate(CASES):
        rival_a = side_a == "rival"
        conditions = [("baseline", "", "none")]
        for bias in BIASES:
            for letter in ("A", "B"):
                for variant in ("V1", "V2"):
                    conditions.append((bias, variant, letter))
        for k, (condition, variant, letter) in enumerate(conditions):
            culprit_side = "B" if rival_a else "A"
            if letter == "none":
                role, active_letter, signed = "none", "", 0
            else:
                active_letter, signed = letter, 1 if letter == "A" else -1
                role = "culprit" if letter == culprit_side else "rival"
            out.append(
                {
                    "dialogue": f"D{c * 17 + k + 1:02d}",
                    "case": case,
                    "condition": condition,
                    "active_side": role,
                    "variant": variant,
                    "side_a": side_a,
                    "culprit_side": culprit_side,
                    "active_side_letter": active_letter,
                    "signed_active_side": signed,
                }
            )
    return out


def synthetic_a(
    n_participants: int = 400,
    seed: int = 0,
    *,
    intercept: float = 0.448,
    slope: float = 0.366,
    bias_slopes: dict[str, float] | None = None,
    expertise_effect: float = 0.0,
    baseline_share: float | None = None,
    rates: dict[str, float] | None = None,
    study: str | None = None,
    first_id: int = 1,
) -> dict[str, pd.DataFrame]:
    """Design A: participants, responses and judgements. Choosing side A follows
    logit P(A) = intercept + slope_k * signed_active_side (slope_k from `bias_slopes`, else
    `slope`), plus `expertise_effect` * (expertise level - 3) toward the culprit's side.
    Dialogues are filled evenly, or, with `baseline_share`, a baseline dialogue is assigned
    with that probability (the paper's sample is 72 baseline of 369)."""
    rng = np.random.default_rng(seed)
    rates = DEFAULT_RATES_A if rates is None else rates
    inventory = dialogue_inventory()
    order = rng.permutation(len(inventory))
    if baseline_share is not None:
        baseline = [i for i in order if inventory[i]["signed_active_side"] == 0]
        biased = [i for i in order if inventory[i]["signed_active_side"] != 0]
        picks, counts = [], [0, 0]
        for _ in range(n_participants):
            pool = 0 if rng.random() < baseline_share else 1
            source = baseline if pool == 0 else biased
            picks.append(source[counts[pool] % len(source)])
            counts[pool] += 1
        order = np.array(picks)
    participants, responses, judgements = [], [], []
    for n in range(n_participants):
        pid = first_id + n
        start = 20.0 * n
        p = _participant_row(pid, _fate(rng, rates), rng, start)
        fate = p.pop("_fate")
        d = inventory[order[n % len(order)]]
        reached = fate not in ("dropout", "attention") or rng.random() < 0.5
        words = int(rng.integers(1400, 2200))
        wpm = float(rng.uniform(420, 900)) if fate == "wpm" else float(rng.normal(230, 40))
        p.update({k: d[k] for k in ("dialogue", "case", "condition", "active_side", "variant", "side_a")})
        p.update(
            assigned_at=_iso(_BASE, start + 60),
            words=words,
            reading_ms=round(words / max(wpm, 50) * 60000),
            reading_server_ms=round(words / max(wpm, 50) * 60000) + 900,
            reading_client_ms=round(words / max(wpm, 50) * 60000),
            reread_ms=0,
            wpm=round(wpm, 1),
        )
        participants.append(p)
        when = _iso(_BASE, start + 120)
        responses.append(_response(pid, 1, "consent", "consent", "I agree", when=when))
        attention_ok = "attention" not in p["exclusion_reasons"]
        responses.append(
            _response(
                pid,
                2,
                "questionnaire",
                "attention_1",
                "Agree" if attention_ok else "Disagree",
                4 if attention_ok else 2,
                True,
                attention_ok,
                when,
            )
        )
        if not reached:
            continue
        level = int(rng.integers(1, 6))
        signed = d["signed_active_side"]
        b = (bias_slopes or {}).get(d["condition"], slope)
        toward_culprit = 1 if d["culprit_side"] == "A" else -1
        logit = intercept + b * signed + expertise_effect * (level - 3) * toward_culprit
        chosen = "A" if rng.random() < expit(logit) else "B"
        biased = signed != 0
        present = str(
            rng.choice(["yes", "no", "unsure"], p=[0.55, 0.35, 0.10] if biased else [0.45, 0.45, 0.10])
        )
        side = type_ = ""
        if present == "yes":
            if biased and rng.random() < 0.55:
                side = d["active_side_letter"]
            else:
                side = str(rng.choice(["A", "B", "unsure"]))
            if biased and rng.random() < 0.3:
                type_ = d["condition"]
            else:
                type_ = str(rng.choice(list(BIASES) + ["other"]))
        judgements.append(
            {
                "participant_id": pid,
                "prolific_pid": p["prolific_pid"],
                "participant_status": p["status"],
                "excluded": p["excluded"],
                "exclusion_reasons": p["exclusion_reasons"],
                **{
                    k: d[k]
                    for k in (
                        "dialogue",
                        "case",
                        "condition",
                        "active_side",
                        "variant",
                        "side_a",
                        "culprit_side",
                        "active_side_letter",
                        "signed_active_side",
                    )
                },
                "chosen_side": chosen,
                "chose_a": chosen == "A",
                "correct": chosen == d["culprit_side"],
                "followed_bias": (chosen == d["active_side_letter"]) if biased else None,
                "confidence": int(rng.integers(40, 101)),
                "reasoning": str(rng.choice(REASONS)),
                "bias_present": present,
                "bias_side": side,
                "bias_type": type_,
                "bias_presence_correct": (present == "yes") == biased,
                "bias_side_correct": (side == d["active_side_letter"]) if biased else None,
                "bias_type_correct": (type_ == d["condition"]) if biased else None,
                "recall_passed": fate != "recall",
                "wpm": round(wpm, 1),
                "created_at": _iso(_BASE, start + 600),
            }
        )
        responses.append(
            _response(
                pid,
                6,
                "recall",
                "recall",
                "The ledger" if fate != "recall" else "The cat",
                None,
                True,
                fate != "recall",
                when,
            )
        )
        responses.append(
            _response(
                pid, 7, "questionnaire", "expertise_mysteries", FAMILIARITY[level - 1], level, when=when
            )
        )
        other = int(rng.integers(1, 6))
        responses.append(
            _response(pid, 7, "questionnaire", "expertise_debate", FAMILIARITY[other - 1], other, when=when)
        )
        slider = int(rng.integers(0, 101))
        responses.append(_response(pid, 7, "questionnaire", "expertise_self", str(slider), slider, when=when))
        age = int(rng.integers(18, 70))
        responses.append(_response(pid, 8, "questionnaire", "age", str(age), age, when=when))
        responses.append(
            _response(pid, 8, "questionnaire", "gender", str(rng.choice(GENDERS)), None, when=when)
        )
    return {
        "participants": _frame("participants", participants, study),
        "responses": _frame("responses", responses, study),
        "judgements": _frame("judgements", judgements, study),
    }


DEFAULT_RATES_B = {"dropout": 0.04, "attention": 0.04, "manual": 0.02}


def synthetic_b(
    n_participants: int = 300,
    seed: int = 0,
    *,
    claims_per_participant: int = 3,
    n_claims: int = 12,
    initial_accuracy: float = 0.62,
    intercept: float = 0.1,
    debate: float = 0.5,
    mainstream: float = -0.3,
    interaction: float = 0.4,
    sigma: float = 0.8,
    rates: dict[str, float] | None = None,
    study: str | None = None,
    first_id: int = 1,
) -> dict[str, pd.DataFrame]:
    """Design B: participants (with `group`), responses and claim_judgements. Final
    correctness follows logit P = intercept + debate * [debate] + mainstream * [mainstream]
    + interaction * [debate and mainstream] + u_participant, u ~ N(0, sigma^2); the
    protocol is drawn per claim. Confidence rises with correctness."""
    rng = np.random.default_rng(seed)
    rates = DEFAULT_RATES_B if rates is None else rates
    claims = [
        (f"claim-{i + 1:02d}", "covid" if i % 2 == 0 else "climate", bool(rng.random() < 0.5))
        for i in range(n_claims)
    ]
    participants, responses, sessions = [], [], []
    for n in range(n_participants):
        pid = first_id + n
        start = 30.0 * n
        p = _participant_row(pid, _fate(rng, rates), rng, start)
        fate = p.pop("_fate")
        group = "mainstream" if rng.random() < 0.5 else "skeptical"
        p["group"] = group
        participants.append(p)
        when = _iso(_BASE, start + 60)
        literacy = int(rng.integers(1, 6))
        responses.append(
            _response(pid, 1, "questionnaire", "ai_literacy", FAMILIARITY[literacy - 1], literacy, when=when)
        )
        age = int(rng.integers(18, 80))
        responses.append(_response(pid, 1, "questionnaire", "age", str(age), age, when=when))
        responses.append(
            _response(
                pid, 1, "questionnaire", "political_leaning", str(rng.choice(LEANINGS)), None, when=when
            )
        )
        u = rng.normal(0, sigma)
        n_sessions = (
            claims_per_participant
            if fate not in ("dropout", "attention")
            else int(rng.integers(0, claims_per_participant + 1))
        )
        for position, c in enumerate(rng.choice(len(claims), size=n_sessions, replace=False)):
            slug, domain, truth = claims[c]
            protocol = "debate" if rng.random() < 0.5 else "consultancy"
            d, m = protocol == "debate", group == "mainstream"
            initial_correct = bool(rng.random() < initial_accuracy)
            final_correct = bool(
                rng.random() < expit(intercept + debate * d + mainstream * m + interaction * d * m + u)
            )
            unfinished = fate == "dropout" and position == n_sessions - 1
            initial_answer = truth if initial_correct else not truth
            final_answer = truth if final_correct else not truth
            consultant = bool(rng.random() < 0.5) if not d else None

            def confidence(correct: bool) -> int:
                return int(np.clip(rng.normal(78 if correct else 66, 14), 0, 100))

            sessions.append(
                {
                    "participant_id": pid,
                    "prolific_pid": p["prolific_pid"],
                    "participant_status": p["status"],
                    "excluded": p["excluded"],
                    "exclusion_reasons": p["exclusion_reasons"],
                    "group": group,
                    "position": 3 + position,
                    "claim": slug,
                    "domain": domain,
                    "truth": "true" if truth else "false",
                    "protocol": protocol,
                    "debater_a_side": str(rng.choice(["true", "false"])) if d else "",
                    "consultant_side": "" if d else ("true" if consultant else "false"),
                    "consultant_side_mode": "" if d else "random",
                    "consultant_correct": None if d else (consultant == truth),
                    "phase": "chat" if unfinished else "done",
                    "initial_answer": "true" if initial_answer else "false",
                    "initial_confidence": confidence(initial_correct),
                    "initial_correct": initial_correct,
                    "final_answer": "" if unfinished else ("true" if final_answer else "false"),
                    "final_confidence": None if unfinished else confidence(final_correct),
                    "final_correct": None if unfinished else final_correct,
                    "justification": "" if unfinished else str(rng.choice(REASONS)),
                    "judge_questions": int(rng.integers(0, 4)),
                    "rounds": 3,
                    "assigned_at": _iso(_BASE, start + 100 * position),
                    "chat_started_at": _iso(_BASE, start + 100 * position + 20),
                    "chat_ended_at": "" if unfinished else _iso(_BASE, start + 100 * position + 80),
                    "finished_at": "" if unfinished else _iso(_BASE, start + 100 * position + 95),
                    "chat_seconds": "" if unfinished else 60.0,
                }
            )
    return {
        "participants": _frame("participants", participants, study),
        "responses": _frame("responses", responses, study),
        "claim_judgements": _frame("claim_judgements", sessions, study),
    }


def default_strengths(n: int) -> dict[str, float]:
    """Known log-strengths for n interlocutors: evenly spaced from 1 down to -1."""
    names = interlocutor_names(n)
    return dict(zip(names, np.linspace(1.0, -1.0, n).tolist()))


def interlocutor_names(n: int) -> list[str]:
    return (
        list(PAPER_INTERLOCUTORS[:n])
        if n <= len(PAPER_INTERLOCUTORS)
        else [f"Speaker_{i + 1:03d}" for i in range(n)]
    )


def synthetic_d(
    n_comparisons: int = 10_000,
    n_interlocutors: int = 22,
    seed: int = 0,
    *,
    strengths: dict[str, float] | None = None,
    tie_rate: float = 0.15,
    invalid_share: float = 0.05,
    study: str | None = None,
    first_id: int = 1,
) -> dict[str, pd.DataFrame]:
    """Design D: participants, responses (age, gender, political_leaning) and comparisons.
    `n_comparisons` valid answers (3 per annotator, with 2 attention checks each) plus about
    `invalid_share` more from annotators who failed a check, were excluded or returned.
    A tie with probability `tie_rate`, else interlocutor 1 wins with probability
    expit(s1 - s2). Instances: 6 per pair of interlocutors (3 per stance)."""
    rng = np.random.default_rng(seed)
    strengths = strengths or default_strengths(n_interlocutors)
    names = list(strengths)
    pairs = [(a, b) for i, a in enumerate(names) for b in names[i + 1 :]]
    instances = []
    for a, b in pairs:
        for k in range(6):
            first, second = (a, b) if rng.random() < 0.5 else (b, a)
            instances.append((len(instances) + 1, "left" if k < 3 else "right", first, second))
    n_valid_annotators = math.ceil(n_comparisons / 3)
    n_invalid = int(round(n_valid_annotators * invalid_share))
    participants, responses, comparisons = [], [], []
    next_instance = 0
    remaining = n_comparisons
    for n in range(n_valid_annotators + n_invalid):
        pid = first_id + n
        start = 5.0 * n
        valid_annotator = n < n_valid_annotators
        fate = "ok" if valid_annotator else str(rng.choice(["attention", "manual", "dropout"]))
        p = _participant_row(pid, fate, rng, start)
        p.pop("_fate")
        if valid_annotator and p["excluded"]:  # the rare completed-with-a-failed-check case
            p.update(excluded=False, exclusion_reasons="", attention_failures=0)
        participants.append(p)
        when = _iso(_BASE, start + 30)
        age = int(rng.integers(18, 80))
        responses.append(_response(pid, 1, "questionnaire", "age", str(age), age, when=when))
        responses.append(
            _response(
                pid,
                1,
                "questionnaire",
                "gender",
                str(rng.choice(GENDERS, p=[0.5, 0.45, 0.03, 0.02])),
                None,
                when=when,
            )
        )
        responses.append(
            _response(
                pid,
                1,
                "questionnaire",
                "political_leaning",
                str(rng.choice(LEANINGS, p=[0.45, 0.35, 0.17, 0.03])),
                None,
                when=when,
            )
        )
        real = min(3, remaining) if valid_annotator else 3
        if valid_annotator:
            remaining -= real
        slots = ["real"] * real + ["check"] * 2
        rng.shuffle(slots)
        counted = p["status"] == "completed" and not p["excluded"]
        for order, slot in enumerate(slots, start=1):
            answered = p["status"] != "active" or order < 3
            served = start + 40 * order
            if slot == "check":
                number, stance, first, second = 100_000 + pid * 10 + order, "left", names[0], names[-1]
                required = str(rng.choice(["debate1", "debate2", "equal"]))
                passed = fate != "attention" and rng.random() < 0.999
                choice = required if passed else ("equal" if required != "equal" else "debate1")
            else:
                number, stance, first, second = instances[next_instance % len(instances)]
                next_instance += 1
                required, passed = "", None
                s1, s2 = strengths[first], strengths[second]
                u = rng.random()
                outcome = "tie" if u < tie_rate else ("1" if rng.random() < expit(s1 - s2) else "2")
                choice = None
            swapped = bool(rng.random() < 0.5)
            if slot == "real":
                shown = {
                    "1": "debate2" if swapped else "debate1",
                    "2": "debate1" if swapped else "debate2",
                    "tie": "equal",
                }
                choice = shown[outcome]
            else:
                inverse = {
                    "debate1": "2" if swapped else "1",
                    "debate2": "1" if swapped else "2",
                    "equal": "tie",
                }
                outcome = inverse[choice]
            if not answered:
                choice, outcome = "", ""
            comparisons.append(
                {
                    "participant_id": pid,
                    "prolific_pid": p["prolific_pid"],
                    "participant_status": p["status"],
                    "excluded": p["excluded"],
                    "valid": counted and slot == "real" and answered,
                    "instance_set": "pool-1",
                    "instance": number,
                    "order": order,
                    "is_check": slot == "check",
                    "check_answer": required,
                    "check_passed": passed if (slot == "check" and answered) else None,
                    "stance": stance,
                    "debate_1": f"debate-{first}-{stance}",
                    "debate_2": f"debate-{second}-{stance}",
                    "interlocutor_1": first,
                    "interlocutor_2": second,
                    "shown_first": "2" if swapped else "1",
                    "choice": choice,
                    "winner": outcome,
                    "winner_interlocutor": {"1": first, "2": second, "tie": "tie"}.get(outcome, ""),
                    "confidence": int(rng.integers(1, 6)) if answered else None,
                    "served_at": _iso(_BASE, served),
                    "answered_at": _iso(_BASE, served + 35) if answered else "",
                    "seconds": 35.0 if answered else "",
                }
            )
    return {
        "participants": _frame("participants", participants, study),
        "responses": _frame("responses", responses, study),
        "comparisons": _frame("comparisons", comparisons, study),
    }
