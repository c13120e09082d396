"""`Calls`: the model access an item's `run()` gets. Every call goes through
`debates.llm` (its retries honour Retry-After), is checked against the job's budget before
it is made, and is recorded in the call log with the item, the prompt template's version
and its cost.

The budget check bounds the call from above: the prompt's words x TOKENS_PER_WORD tokens
in, `max_tokens` out, at the given prices. If what the job has spent, plus what the calls
in flight may cost, plus this bound would pass the budget, the job stops ("budget", with a
note) and `JobStopped` ends the item, which goes back to pending unpaid for this call.
Kinds let `JobStopped` and `llm.LLMError` through: the runner handles them (a retryable
error retries the item later, up to JOB_ITEM_ATTEMPTS; another fails it).
"""

from __future__ import annotations

import json
import re
from decimal import Decimal
from typing import Any

import jsonschema

from debates import llm
from debates.call_log import llm_call_record
from debates.jobs import services
from debates.jobs.kinds import ItemFailed
from debates.streaming import db

TOKENS_PER_WORD = 2  # an upper bound on tokens per whitespace-separated word
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


def call_estimate(request: llm.LLMRequest, prices: Any) -> Decimal:
    """The most a call can cost: its prompt's words x TOKENS_PER_WORD in, max_tokens out.
    Unknown prices count as free, as they do in the call log."""
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


class Calls:
    """Model calls on behalf of one job item (see the module's docstring)."""

    def __init__(self, item: Any) -> None:
        self.item = item
        self.made = 0  # calls recorded so far in this run of the item

    async def complete(
        self, request: llm.LLMRequest, *, role: str, template: Any = None, prices: Any = None
    ) -> llm.LLMResult:
        """A whole completion, within the budget, recorded in the call log."""
        estimate = call_estimate(request, prices)
        stopped = await db(services.call_reserve)(item_id=self.item.pk, estimate=estimate)
        if stopped:
            raise JobStopped(stopped)
        config = _Recorded(template, prices)
        try:
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
    ) -> dict:
        """The answer as a JSON object fitting `schema` (a code fence or words around it are
        tolerated). An unusable answer is asked for once more, with what was wrong; a second
        one fails the item (ItemFailed, with the reason)."""
        current = request
        problem = ""
        for _attempt in (1, 2):
            result = await self.complete(current, role=role, template=template, prices=prices)
            data, problem = parse_answer(result.text, schema)
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


_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")


def parse_answer(text: str, schema: dict) -> tuple[dict | None, str]:
    """The JSON object in a model's answer if it fits `schema`, else (None, what is wrong)."""
    body = _FENCE.sub("", text.strip())
    if not body.startswith("{") and "{" in body and "}" in body:
        body = body[body.index("{") : body.rindex("}") + 1]
    try:
        data = json.loads(body)
    except ValueError as error:
        return None, f"not JSON ({getattr(error, 'msg', error)})"
    if not isinstance(data, dict):
        return None, "not a JSON object"
    found = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(data))
    if found is None:
        return data, ""
    where = "/".join(str(p) for p in found.absolute_path)
    return None, f"does not fit the schema at '{where}': {found.message}"[:300]


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
