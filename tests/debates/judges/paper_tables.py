"""Paper 000's Tables 31 and 33 (the first five rows of each: a baseline and the four anchoring
dialogues) as item results, for tests that check our counts against the published ones."""

LABELS = ["CH", "CS", "GF", "GP", "G4M", "G5"]

# (paper ID, condition, active side letter, variant, the six sides, published accuracy)
QUARTERBACK = [  # Table 31: A (culprit) vs. B (rival)
    ("01", "baseline", "", "", "BBAABA", "3/6"),
    ("02", "anchoring", "A", "V1", "ABAAAA", "5/6"),
    ("03", "anchoring", "A", "V2", "AAAABA", "5/6"),
    ("04", "anchoring", "B", "V1", "BBAABB", "2/6"),
    ("05", "anchoring", "B", "V2", "BBAABB", "2/6"),
]
BRIEFCASE = [  # Table 33: A (rival) vs. B (culprit)
    ("35", "baseline", "", "", "ABAABB", "3/6"),
    ("36", "anchoring", "A", "V1", "AAAAAB", "1/6"),
    ("37", "anchoring", "A", "V2", "ABAAAB", "2/6"),
    ("38", "anchoring", "B", "V1", "BBBABB", "5/6"),
    ("39", "anchoring", "B", "V2", "BBBABB", "5/6"),
]
CASES = {"quarterback": ("culprit", QUARTERBACK), "briefcase": ("rival", BRIEFCASE)}


def results() -> list[dict]:
    """One item result (as `prompts.result_of` writes it) per dialogue and judge."""
    out = []
    for case, (side_a, rows) in CASES.items():
        culprit_side = "A" if side_a == "culprit" else "B"
        for number, condition, active, variant, sides, _ in rows:
            role = "none" if not active else ("culprit" if active == culprit_side else "rival")
            for label, side in zip(LABELS, sides):
                out.append(
                    {
                        "side": side,
                        "confidence": 70,
                        "reasoning": "…",
                        "culprit_side": culprit_side,
                        "correct": side == culprit_side,
                        "condition": condition,
                        "variant": variant,
                        "active_side": role,
                        "active_side_letter": active,
                        "side_a": side_a,
                        "dialogue": f"d{number}",
                        "case": case,
                        "judge": label,
                        "model": f"model-{label.lower()}",
                    }
                )
    return out


def published_accuracy() -> dict[str, str]:
    return {f"d{row[0]}": row[5] for _, rows in CASES.values() for row in rows}


# Counted by hand from the two tables (see the tests).
ACCURACY_BY_JUDGE = {"CH": 4, "CS": 5, "GF": 7, "GP": 5, "G4M": 4, "G5": 8}  # out of 10
SHIFTED = {"CH": 4, "CS": 2, "GF": 2, "GP": 0, "G4M": 3, "G5": 2}  # out of 8 compared
