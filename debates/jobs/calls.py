"""`Calls`: the model access an item's `run()` gets. Every call goes through
`debates.llm` (its retries honour Retry-After), is checked against the job's budget before
it is made, and is recorded in the call log with the item, the prompt template's version
and its cost.

The budget check bounds the call from above: the prompt's words x call_log.TOKENS_PER_WORD tokens
in, `max_tokens` out, at the given prices. If what the job has spent, plus what the calls
in flight may cost, plus this bound would pass the budget, the job stops ("budget", with a
note) and `JobStopped` ends the item, which goes back to pending unpaid for this call.
A call also waits for a place at its model's endpoint (`limits`: `JOB_MODEL_LIMITS`, shared
by every job and process), and a call this item already made is reused, not repeated.
Kinds let `JobStopped` and `llm.LLMError` through: the runner handles them (a retryable
error retries the item later, up to JOB_ITEM_ATTEMPTS; another fails it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from debates import llm
from debates.call_log import call_upper_bound, llm_call_record
from debates.jobs import limits, services
from debates.jobs.kinds import ItemFailed
from debates.streaming import db

INVALID = "invalid_json"
RETRY = (
    "Your answer could not be used: {problem}. Answer again with only the JSON object the "
    "instructions ask for, nothing before or after it."
)


class JobStopped(Exception):
    """The job stopped while the item ran (`status`: "budget" or "cancelled"): the item is
    put back to pending (budget) or cancelled, never failed."""

    def __init__(self, status: str, message: str = "") -> None:
        super().__init__(message or status)
        self.status = status


class _Recorded:
    """What the call log reads from a configuration: the template version and the prices."""

    def __init__(self, template: Any, prices: Any) -> None:
        self.template_version = getattr(template, "version", None)
        self.price_in_per_mtok = getattr(prices, "price_in_per_mtok", None)
        self.price_out_per_mtok = getattr(prices, "price_out_per_mtok", None)


call_estimate = call_upper_bound  # the most a call can cost (debates.call_log)


class Calls:
    """Model calls on behalf of one job item (see the module's docstring)."""

    def __init__(self, item: Any) -> None:
        self.item = item
        self.made = 0  # calls recorded so far in this run of the item
        self.replayed = 0  # calls reused from an earlier attempt of the item

    async def complete(
        self, request: llm.LLMRequest, *, role: str, template: Any = None, prices: Any = None
    ) -> llm.LLMResult:
        """A whole completion, within the budget, recorded in the call log. A call this item
        already made with the same prompt and parameters (before a killed worker or a budget
        stop cut its attempt short) is reused, not paid for again; give a different seed to
        ask the same prompt again on purpose."""
        done = await db(services.item_replay)(item_id=self.item.pk, prompt_hash=request.prompt_hash)
        if done is not None:
            self.replayed += 1
            return _result_of(done)
        estimate = call_estimate(request, prices)
        stopped = await db(services.call_reserve)(item_id=self.item.pk, estimate=estimate)
        if stopped:
            raise JobStopped(stopped)
        config = _Recorded(template, prices)
        try:
            async with limits.endpoint_place(request.model):  # JOB_MODEL_LIMITS, across jobs
                result = await llm.complete(request)
        except llm.LLMError as error:
            await db(self._record)(role, config, request, None, error, template)
            raise
        await db(self._record)(role, config, request, result, None, template)
        return result

    async def json(
        self,
        request: llm.LLMRequest,
        schema: dict,
        *,
        role: str,
        template: Any = None,
        prices: Any = None,
        check: Callable[[dict], str | None] | None = None,
    ) -> dict:
        """The answer as a JSON object fitting `schema` (a code fence or words around it are
        tolerated) and passing `check` (which returns what is wrong, or None). An unusable
        answer is asked for once more, with what was wrong; a second one fails the item
        (ItemFailed, with the reason)."""
        current = request
        problem = ""
        for _attempt in (1, 2):
            result = await self.complete(current, role=role, template=template, prices=prices)
            data, problem = parse_answer(result.text, schema)
            if data is not None and check is not None:
                problem = check(data) or ""
                data = None if problem else data
            if data is not None:
                return data
            current = _again(request, result.text, problem)
        raise ItemFailed(f"the model's answer was not usable twice: {problem}")

    def _record(self, role, config, request, result, error, template) -> None:
        llm_call_record(
            role=role, config=config, request=request, result=result, error=error, job_item=self.item
        )
        self.made += 1
        services.call_released(item_id=self.item.pk, template=template)


parse_answer = llm.json_answer  # the one reader of JSON answers


def _result_of(call: Any) -> llm.LLMResult:
    """A recorded call as the result it gave."""
    return llm.LLMResult(
        text=call.output,
        tokens_in=call.tokens_in,
        tokens_out=call.tokens_out,
        ttft_ms=call.ttft_ms,
        total_ms=call.total_ms or 0,
        attempts=call.attempts,
        backend=call.backend,
        model=call.model,
    )


def _again(request: llm.LLMRequest, answer: str, problem: str) -> llm.LLMRequest:
    messages = [
        *request.messages,
        {"role": "assistant", "content": answer},
        {"role": "user", "content": RETRY.format(problem=problem)},
    ]
    return llm.LLMRequest(
        model=request.model,
        messages=messages,
        temperature=request.temperature,
        max_tokens=request.max_tokens,
        seed=request.seed,
        timeout=request.timeout,
        hint={**request.hint, "retry": problem},
    )
