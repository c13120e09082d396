"""The German texts of the demo study `mystery-debate` (its stories and debates stay in
English): a participant who opens the link with `&lang=de`, or whose browser prefers German,
takes the study in German. Steps are named by their position in `mystery.MYSTERY_STUDY`."""

# In the order of mystery.LIKERT_AGREE and mystery.FAMILIARITY (an item whose translated
# options are not as many as its own shows its own).
LIKERT_AGREE_DE = ["Stimme überhaupt nicht zu", "Stimme nicht zu", "Stimme zu", "Stimme voll und ganz zu"]
FAMILIARITY_DE = ["Überhaupt nicht", "Ein wenig", "Mäßig", "Sehr", "Äußerst"]

CONSENT_DE = """\
Dies ist eine Forschungsstudie darüber, wie Menschen Argumente beurteilen. Sie lesen eine \
kurze Detektivgeschichte und eine Debatte zwischen zwei Seiten darüber, wer verantwortlich \
ist, und beantworten dann einige Fragen. Die Teilnahme dauert etwa 15 Minuten.

Die Teilnahme ist freiwillig. Sie können jederzeit aufhören, indem Sie diese Seite schließen \
und die Studie auf Prolific zurückgeben. Wir speichern Ihre Antworten und Ihre Prolific-ID; \
nach Ihrem Namen fragen wir nicht. Ihre Antworten werden zusammen mit denen anderer \
Teilnehmender ausgewertet und nur zusammengefasst veröffentlicht.

Einige Fragen prüfen, ob Sie aufmerksam lesen; bitte folgen Sie ihren Anweisungen."""

INSTRUCTIONS_DE = """\
Zuerst lesen Sie eine Kriminalgeschichte. Genau eine der Personen darin ist verantwortlich.

Danach lesen Sie eine Debatte in sechs Beiträgen. Seite A argumentiert, dass eine Person \
verantwortlich ist, und Seite B, dass es jemand anderes ist. Eine der beiden Seiten \
argumentiert für die Wahrheit.

Dann entscheiden Sie, welche Seite für die tatsächlich verantwortliche Person argumentiert \
hat, geben an, wie sicher Sie sich sind, und begründen Ihre Wahl. Es gibt keinen Zeitdruck: \
Lesen Sie in Ihrem eigenen Tempo."""

DEBRIEF_DE = """\
Vielen Dank für Ihre Teilnahme.

Die Debatten in dieser Studie wurden für die Forschung geschrieben. In einigen davon wurde \
eine Seite so geschrieben, dass sie eine rhetorische Technik einsetzt – etwa eine frühe \
Behauptung wiederholen, Fachjargon verwenden, weitschweifig sein oder fehlerhaft \
argumentieren –, um zu sehen, ob solche Techniken Urteilende beeinflussen. Die Geschichten \
und die Personen darin sind erfunden.

Klicken Sie auf die Schaltfläche unten, um zu Prolific zurückzukehren und Ihren Abschluss \
zu erfassen."""


def _item(text: str, options: list[str] | None = None) -> dict:
    return {"text": text, "help_text": "", "options": options or []}


MYSTERY_STUDY_DE = {
    "study": {
        "title": "Wer war es? Eine Debatte über einen Kriminalfall beurteilen",
        "screened_out_message": "",
        "failed_check_message": "",
    },
    "steps": {
        "1": {"title": "Information und Einwilligung", "texts": {"config": {"text": CONSENT_DE}}},
        "2": {"title": "Was Sie tun werden", "texts": {"config": {"text": INSTRUCTIONS_DE}}},
        "3": {"title": "Die Geschichte", "texts": {}},
        "4": {"title": "Die Debatte", "texts": {}},
        "5": {"title": "Ihr Urteil", "texts": {}},
        "6": {
            "title": "Eine kurze Frage",
            "texts": {
                "questions": {
                    "attention_1": _item(
                        "Es ist wichtig, dass Sie bei dieser Studie aufmerksam sind. Bitte wählen Sie "
                        "bei dieser Frage „Stimme überhaupt nicht zu“.",
                        LIKERT_AGREE_DE,
                    )
                }
            },
        },
        "7": {"title": "Zur Debatte", "texts": {}},
        "8": {"title": "Noch eine Frage zur Debatte", "texts": {}},
        "9": {
            "title": "Ihre Erfahrung",
            "texts": {
                "questions": {
                    "expertise_mysteries": _item(
                        "Wie vertraut sind Sie mit Detektivgeschichten und Kriminalrätseln?", FAMILIARITY_DE
                    ),
                    "expertise_debate": _item(
                        "Wie viel Erfahrung haben Sie mit formellen Debatten oder dem Beurteilen "
                        "von Argumenten?",
                        FAMILIARITY_DE,
                    ),
                    "expertise_self": _item(
                        "Wie gut können Sie Ihrer Meinung nach ein starkes von einem schwachen Argument "
                        "unterscheiden?",
                        ["Überhaupt nicht gut", "Ausgezeichnet"],
                    ),
                    "attention_2": _item("Ich war diese Woche in jedem Land der Welt.", LIKERT_AGREE_DE),
                }
            },
        },
        "10": {
            "title": "Über Sie",
            "texts": {
                "questions": {
                    "age": _item("Wie alt sind Sie?"),
                    "gender": _item(
                        "Welchem Geschlecht ordnen Sie sich zu?",
                        ["Frau", "Mann", "Nicht-binär", "Selbstbeschreibung", "Keine Angabe"],
                    ),
                    "education": _item(
                        "Was ist Ihr höchster abgeschlossener Bildungsabschluss?",
                        [
                            "Schulabschluss oder weniger",
                            "Berufsausbildung",
                            "Bachelor oder gleichwertig",
                            "Master, Promotion oder gleichwertig",
                            "Keine Angabe",
                        ],
                    ),
                    "comments": _item("Möchten Sie uns noch etwas zur Studie mitteilen? (optional)"),
                }
            },
        },
        "11": {"title": "Vielen Dank", "texts": {"config": {"text": DEBRIEF_DE}}},
    },
}
