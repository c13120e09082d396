"""Every design's record of random draws: one row per draw a study made for a participant."""

from __future__ import annotations

import json
from collections.abc import Iterator

from analysis.exports.table import ALL, CHUNK, Table, analysed, col, iso
from debates.models import RandomDraw
from studies.models import Study


def draw_rows(study: Study, window: slice = ALL) -> Iterator[dict]:
    queryset = (
        RandomDraw.objects.filter(analysed(), participant__study=study)
        .select_related("participant")
        .order_by("id")
    )[window]
    for d in queryset.iterator(chunk_size=CHUNK):
        yield {
            "participant_id": d.participant_id,
            "prolific_pid": d.participant.prolific_pid,
            "purpose": d.purpose,
            "key": d.key,
            "outcome": json.dumps(d.outcome, sort_keys=True, ensure_ascii=False),
            "created_at": iso(d.created_at),
        }


DRAWS = Table(
    "draws",
    "One row per random draw made for a participant, from the study's seed (the seed is in the "
    "study's snapshot): rerunning the study from that seed with the same arrivals draws the same.",
    [
        col("participant_id", "Rostrum's id of the participant."),
        col("prolific_pid", "PROLIFIC_PID."),
        col(
            "purpose",
            "What was drawn: dialogue (design A's assignment), recall_order, claim_cell (design B's "
            "protocol x claim), side_a and consultant_side (design B's blocks: debater A's side, the "
            "consultant's correctness and side), comparisons (design D's instances, check places and "
            "display order).",
        ),
        col("key", "The key under which the study's seed was drawn from, ':'-joined."),
        col("outcome", "What came out, as JSON."),
        col("created_at", "When it was drawn (UTC)."),
    ],
    draw_rows,
    windowed=True,
)
