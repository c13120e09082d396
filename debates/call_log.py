"""The log of model calls, shared by every design: recording one call with its cost, and the
totals per study that the admin shows."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum
from django.utils import timezone

from debates import llm
from debates.models import JobItem, LiveSession, LiveTurn, LLMCall, PersuasionDialogue, PersuasionTurn


def llm_call_record(**call) -> LLMCall:
    """Store one call (see `llm_call_row`)."""
    row = llm_call_row(**call)
    row.save(force_insert=True)
    return row


def llm_calls_save(rows: list[LLMCall]) -> None:
    """Store calls built by `llm_call_row`, in one INSERT (a worker's turns that end together)."""
    LLMCall.objects.bulk_create(rows)


def llm_call_row(
    *,
    role: str,
    config: Any,
    request: llm.LLMRequest,
    result: llm.LLMResult | None = None,
    error: llm.LLMError | None = None,
    session: LiveSession | None = None,
    turn: LiveTurn | None = None,
    dialogue: PersuasionDialogue | None = None,
    dialogue_turn: PersuasionTurn | None = None,
    job_item: JobItem | None = None,
) -> LLMCall:
    """One call, successful (`result`) or not (`error`), to store. `config` is whatever set the
    call up (a debater configuration, …): its `template_version` and its prices per million
    tokens (`price_in_per_mtok`, `price_out_per_mtok`) are recorded when it has them."""
    source = result or error
    tokens_in = getattr(result, "tokens_in", None)
    tokens_out = getattr(result, "tokens_out", None)
    backend = getattr(result, "backend", None) or llm.backend_name()
    offline = backend == llm.OFFLINE
    study_id = session.participant.study_id if session else dialogue.study_id if dialogue else None
    if job_item is not None and study_id is None:
        study_id = _job_study_id(job_item)
    return LLMCall(
        study_id=study_id,
        session=session,
        turn=turn,
        persuasion_dialogue=dialogue,
        persuasion_turn=dialogue_turn,
        job_item=job_item,
        role=role,
        backend=backend,
        # The offline backend writes its own text: it is never the model a configuration names.
        model=llm.OFFLINE if offline else request.model,
        params=request.params,
        template_version=getattr(config, "template_version", None),
        prompt_hash=request.prompt_hash,
        messages=request.messages,
        output=result.text if result else getattr(error, "partial", ""),
        tokens_in=tokens_in,
        tokens_out=tokens_out,
        ttft_ms=getattr(source, "ttft_ms", None),
        total_ms=getattr(source, "total_ms", None),
        attempts=getattr(source, "attempts", 1) or 1,
        error_kind=getattr(error, "kind", "") if error else "",
        error_message=(getattr(error, "message", "") or str(error))[:500] if error else "",
        cost_usd=Decimal(0) if offline else call_cost(config, tokens_in, tokens_out),
        created_at=timezone.now(),
    )


def _job_study_id(job_item: JobItem) -> int | None:
    """The study a job's calls count towards: its config's "study" slug, when set."""
    from studies.models import Study

    slug = (job_item.job.config or {}).get("study")
    if not slug:
        return None
    return Study.objects.filter(slug=slug).values_list("pk", flat=True).first()


def call_cost(config: Any, tokens_in: int | None, tokens_out: int | None) -> Decimal | None:
    """USD for the tokens at the configuration's prices; None when either is unknown."""
    price_in = getattr(config, "price_in_per_mtok", None)
    price_out = getattr(config, "price_out_per_mtok", None)
    if price_in is None or price_out is None or tokens_in is None or tokens_out is None:
        return None
    million = Decimal(1_000_000)
    return tokens_in * price_in / million + tokens_out * price_out / million


# An upper bound on tokens per whitespace-separated word (English prose runs at about 1.3
# with OpenAI's tokenisers): budgets bound a call before it is made.
TOKENS_PER_WORD = 2


def call_upper_bound(request: llm.LLMRequest, prices: Any) -> Decimal:
    """The most a call can cost: its prompt's words x TOKENS_PER_WORD in, max_tokens out, at
    the prices of `prices` (a configuration, as in `call_cost`). Unknown prices count as
    free, as they do in the call log."""
    price_in = getattr(prices, "price_in_per_mtok", None)
    price_out = getattr(prices, "price_out_per_mtok", None)
    if price_in is None or price_out is None:
        return Decimal(0)
    words = sum(len(str(m.get("content", "")).split()) for m in request.messages)
    million = Decimal(1_000_000)
    return (
        Decimal(words * TOKENS_PER_WORD) * Decimal(price_in) / million
        + Decimal(request.max_tokens) * Decimal(price_out) / million
    )


def llm_totals(calls: QuerySet) -> list[dict]:
    """Calls, failures, tokens and cost per study, over the given calls."""
    rows = (
        calls.order_by()
        .values("study__slug")
        .annotate(
            calls=Count("id"),
            failed=Count("id", filter=~Q(error_kind="")),
            tokens_in=Sum("tokens_in"),
            tokens_out=Sum("tokens_out"),
            cost=Sum("cost_usd"),
        )
        .order_by("study__slug")
    )
    return list(rows)
