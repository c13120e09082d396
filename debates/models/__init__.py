"""Models of the debates app: pre-generated dialogues about cases (design A, `static`) and
live AI debates and consultancies about claims (design B, `live`)."""

from debates.models.live import Claim, DebaterConfig, LiveSession, LiveTurn, LLMCall, StudyClaim
from debates.models.pairwise import Comparison, Excerpt, Instance, InstanceSet
from debates.models.static import (
    BiasReport,
    Case,
    Dialogue,
    DialogueAssignment,
    Judgement,
    StudyDialogue,
    Turn,
    count_words,
)

__all__ = [
    "BiasReport",
    "Case",
    "Claim",
    "Comparison",
    "DebaterConfig",
    "Dialogue",
    "Excerpt",
    "Instance",
    "InstanceSet",
    "DialogueAssignment",
    "Judgement",
    "LLMCall",
    "LiveSession",
    "LiveTurn",
    "StudyClaim",
    "StudyDialogue",
    "Turn",
    "count_words",
]
