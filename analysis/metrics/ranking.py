"""Win matrices and Bradley–Terry rankings of interlocutors (paper 003 §5): pure functions
over (interlocutor 1, interlocutor 2, winner) outcomes."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Ranking:
    labels: list[str]
    wins: np.ndarray  # wins[i, j]: times labels[i] was judged more persuasive than labels[j]
    strengths: np.ndarray  # Bradley–Terry log-strengths, mean 0

    def ordered(self) -> list[tuple[str, float]]:
        order = np.argsort(-self.strengths, kind="stable")
        return [(self.labels[i], float(self.strengths[i])) for i in order]


def win_matrix(
    outcomes: Iterable[tuple[str, str, str]], labels: list[str] | None = None
) -> tuple[list[str], np.ndarray]:
    """outcomes: (interlocutor_1, interlocutor_2, winner) with winner '1', '2' or 'tie'.
    A tie adds half a win to each side."""
    outcomes = list(outcomes)
    labels = labels or sorted({x for a, b, _ in outcomes for x in (a, b)})
    index = {label: n for n, label in enumerate(labels)}
    wins = np.zeros((len(labels), len(labels)))
    for a, b, winner in outcomes:
        i, j = index[a], index[b]
        if winner == "1":
            wins[i, j] += 1
        elif winner == "2":
            wins[j, i] += 1
        elif winner == "tie":
            wins[i, j] += 0.5
            wins[j, i] += 0.5
        else:
            raise ValueError(f"winner must be '1', '2' or 'tie', got {winner!r}")
    return labels, wins


def bradley_terry(labels: list[str], wins: np.ndarray, alpha: float = 0.01) -> Ranking:
    """Strengths by I-LSR (Maystre & Grossglauser 2015) with regularisation alpha, as the
    paper fits them with `choix`."""
    import choix

    if len(labels) < 2 or wins.sum() == 0:
        return Ranking(labels, wins, np.zeros(len(labels)))
    strengths = choix.ilsr_pairwise_dense(wins, alpha=alpha)
    return Ranking(labels, wins, strengths - strengths.mean())
