"""The admin of what every design shares: the log of model calls, with totals per study.
Each design's own admin is in its package (`debates/<design>/admin.py`), imported by the
app's `ready()`."""

from __future__ import annotations

from django.contrib import admin

from debates.admin_base import ReadOnlyAdmin
from debates.call_log import llm_totals
from debates.models import LLMCall


@admin.register(LLMCall)
class LLMCallAdmin(ReadOnlyAdmin):
    list_display = [
        "created_at",
        "study",
        "role",
        "model",
        "tokens_in",
        "tokens_out",
        "ttft_ms",
        "total_ms",
        "attempts",
        "error_kind",
        "cost_usd",
    ]
    list_filter = ["study", "role", "backend", "model", "error_kind"]
    search_fields = ["prompt_hash", "output"]
    date_hierarchy = "created_at"

    def changelist_view(self, request, extra_context=None):
        response = super().changelist_view(request, extra_context)
        if hasattr(response, "context_data") and "cl" in response.context_data:
            queryset = response.context_data["cl"].queryset
            response.context_data["totals"] = llm_totals(queryset)
        return response
