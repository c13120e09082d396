"""Read a participant page's step form the way a browser would (used by tests and bench).

The parser moved into the application (`pilots.pages`, which the pilots use); this module
keeps the name tests and bench import."""

from __future__ import annotations

from pilots.pages import StepForm, default_answers, instructed_answer, instructed_answers, parse_step

__all__ = ["StepForm", "default_answers", "instructed_answer", "instructed_answers", "parse_step"]
