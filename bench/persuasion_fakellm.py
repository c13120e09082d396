"""The model server of the persuasion benchmark: `devtools.fakellm` with a responder that
plays design C's classifier, recording the timing of every stream (the agents' turns).

    python -m bench.persuasion_fakellm --port P [--timing-cap N]

Requests to a model whose base name starts with `pclass` get what the classifier must
answer, as valid JSON: the classification of every `<sentence i="…">` of the turn (each a
claim), no duplicates for a redundancy check, false for a concede or retract check. Every
other model (the agents', e.g. `pagent:ttft=300:tps=30:tokens=120`) gets the usual
deterministic words, paced by its options. The classifier's answers are not streamed, so
the recorded timings are the agents' streams only.
"""

from __future__ import annotations

import argparse
import html
import json
import re

import uvicorn

from devtools.fakellm import DEFAULT_MODELS, FakeLLM, content_text, uvicorn_config

CLASSIFIER_BASE = "pclass"
SENTENCE = re.compile(r'<sentence i="\d+">(.*?)</sentence>', re.S)


def respond(body: dict) -> str | None:
    """The classifier's JSON answer, or None (the usual words) for any other model."""
    if not str(body.get("model", "")).startswith(CLASSIFIER_BASE):
        return None
    messages = body.get("messages") or []
    user = [content_text(m.get("content")) for m in messages if m.get("role") == "user"]
    prompt = user[0] if user else ""  # the task's own prompt (a retry adds a later one)
    sentences = SENTENCE.findall(prompt)
    if sentences:
        entries = [
            {"sentence": html.unescape(s), "move": "claim", "target": None, "proposition": s, "premises": []}
            for s in sentences
        ]
        return json.dumps({"sentences": entries})
    if '"duplicates"' in prompt:
        return json.dumps({"duplicates": []})
    if "retract" in prompt.lower():
        return json.dumps({"retract": False})
    return json.dumps({"concede": False})


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8999)
    parser.add_argument("--timing-cap", type=int, default=100_000)
    args = parser.parse_args(argv)
    application = FakeLLM(DEFAULT_MODELS, timing_cap=args.timing_cap, record_timing=True, responder=respond)
    uvicorn.Server(uvicorn_config(application, args.host, args.port)).run()


if __name__ == "__main__":
    main()
