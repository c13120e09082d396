"""Models of the debates app, one module per study design plus the shared model-call log.
The app label and the migrations are one for all of them."""

from debates.models.calls import LLMCall
from debates.models.dialogues import (
    BiasReport,
    Case,
    Condition,
    ConditionTarget,
    Dialogue,
    DialogueAssignment,
    Judgement,
    StudyDialogue,
    Turn,
    condition_labels,
    count_words,
)
from debates.models.draws import RandomDraw
from debates.models.jobs import Job, JobItem, PromptTemplate
from debates.models.live import Claim, DebaterConfig, LiveSession, LiveTurn, StudyClaim
from debates.models.pairwise import Comparison, Excerpt, Instance, InstanceSet
from debates.models.persuasion import (
    AgentConfig,
    PersuasionBatch,
    PersuasionDialogue,
    PersuasionTurn,
    Topic,
)

__all__ = [
    "AgentConfig",
    "PersuasionBatch",
    "PersuasionDialogue",
    "PersuasionTurn",
    "Topic",
    "BiasReport",
    "Case",
    "Claim",
    "Comparison",
    "Condition",
    "ConditionTarget",
    "DebaterConfig",
    "Dialogue",
    "DialogueAssignment",
    "Excerpt",
    "Instance",
    "InstanceSet",
    "Job",
    "JobItem",
    "Judgement",
    "LLMCall",
    "LiveSession",
    "LiveTurn",
    "PromptTemplate",
    "RandomDraw",
    "StudyClaim",
    "StudyDialogue",
    "Turn",
    "condition_labels",
    "count_words",
]
