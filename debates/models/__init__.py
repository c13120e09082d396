"""Models of the debates app: pre-generated dialogues about cases (design A, `static`) and
live AI debates and consultancies about claims (design B, `live`)."""

from debates.models.live import Claim, DebaterConfig, LiveSession, LiveTurn, LLMCall, StudyClaim
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
    "DebaterConfig",
    "Dialogue",
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
