"""Resumable LLM jobs, the machinery every LLM pipeline shares (issue 11).

- `kinds`: the job-kind registry (what one item of a job does, its admin config form);
- `calls`: `Calls`, the model access an item's `run()` gets (budget, call log, JSON);
- `templates`: versioned prompt templates;
- `services`: start / pause / resume / cancel, claiming and finishing items, progress;
- `runner`: running one item; `tasks`: the Celery tasks and the watchdog;
- `admin`: the job page with its live progress, the prompt templates.

This package imports no design package: designs register their kinds from `ready()`.
"""
