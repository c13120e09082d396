"""A test-only job kind ("test_echo") and its settings: each item asks the model once (or for
JSON), with prices of $1 a token so calls cost money; tests hook into each item before its
call (`HOOKS["before"]`) to pause, cancel, gate or count."""

from __future__ import annotations

import secrets
from decimal import Decimal
from types import SimpleNamespace

from django import forms

from debates import llm
from debates.jobs import kinds
from debates.jobs import templates as job_templates
from debates.models import Job

KEY = "test_echo"
PRICES = SimpleNamespace(price_in_per_mtok=Decimal(1_000_000), price_out_per_mtok=Decimal(1_000_000))
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"enum": ["yes", "no"]}},
    "required": ["answer"],
}
MAX_TOKENS = 10  # each call: "item N" is 2 words in (costs 2), 10 tokens out (10): $12
ESTIMATE = Decimal(2 * 2 + MAX_TOKENS)  # what the budget check bounds each call by: $14
HOOKS: dict = {}


class EchoConfig(forms.Form):
    items = forms.IntegerField(min_value=1, max_value=50)
    model = forms.CharField()
    as_json = forms.BooleanField(required=False)


class EchoKind(kinds.JobKind):
    key = KEY
    label = "Echo (tests)"
    description = "Asks the model about each item."
    config_form = EchoConfig

    def plan(self, job):
        return [kinds.ItemSpec(key=f"item-{n}", payload={"n": n}) for n in range(1, job.config["items"] + 1)]

    async def run(self, item, calls):
        if "before" in HOOKS:
            await HOOKS["before"](item)
        template = await _template()
        request = llm.LLMRequest(
            model=item.job.config["model"],
            messages=[{"role": "user", "content": f"item {item.payload['n']}"}],
            max_tokens=MAX_TOKENS,
        )
        if item.job.config.get("as_json"):
            return await calls.json(request, SCHEMA, role="test_echo", template=template, prices=PRICES)
        result = await calls.complete(request, role="test_echo", template=template, prices=PRICES)
        return {"text": result.text}

    def summary(self, job):
        return [
            {"item": i.key, "text": (i.result or {}).get("text", "")} for i in job.items.filter(status="done")
        ]


async def _template():
    from debates.streaming import db

    return await db(job_templates.latest)("test-echo", "Echo {n}")


def model(options: str = "") -> str:
    return f"fake-{secrets.token_hex(4)}{options}"


def new_job(items: int = 3, *, options: str = "", as_json: bool = False, **fields) -> Job:
    config = {"items": items, "model": model(options), "as_json": as_json}
    return Job.objects.create(name=f"job-{secrets.token_hex(3)}", kind=KEY, config=config, **fields)
