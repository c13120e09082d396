"""Reports: `manage.py analyze` on a study and on its CSVs gives the same results; reports kept
in the database are computed in the background, shown in the admin with their plots, kept
a few at a time, and queued nightly for live and recently closed studies."""

import csv
import io
import json
from datetime import timedelta

import pandas as pd
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from analysis.models import Report
from analysis.reports import build_report, report_request, report_run, reports_nightly, reports_prune
from debates.models import StudyDialogue
from studies.models import Study
from tests.support.cast import Walker
from tests.support.studies import CONSENT_STEP, DEBRIEF_STEP, build_study


def walk(study, n: int) -> None:
    for _ in range(n):
        w = Walker(study)
        w.enter()
        w.walk()


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("fixture", "design", "figure"),
    [("mystery_study", "A", "accuracy.png"), ("pairs_study", "D", "strengths.png")],
)
def test_a_studys_report_and_the_same_analysis_of_its_csvs_agree(request, fixture, design, figure, tmp_path):
    study = request.getfixturevalue(fixture)
    walk(study, 4)
    out = tmp_path / "report"
    call_command("analyze", study.slug, "--out", str(out), stdout=io.StringIO())
    results = json.loads((out / "results.json").read_text())
    assert results["design"] == design and results["n"]["participants"] == 4
    assert (out / "figures" / figure).read_bytes().startswith(b"\x89PNG")
    page = (out / "report.html").read_text()
    assert study.title in page and f'src="figures/{figure}"' in page
    # Places per dialogue are design A's (and B's) setting; a pairwise study has none to show.
    assert ("Target per item" in page) == (design == "A")
    assert {"participants.csv", "responses.csv", "codebook.csv", "study.json"} <= {
        p.name for p in out.iterdir()
    }
    if design == "A":  # four walkers judge four dialogues: the others are in the fill with 0
        fill = {f["dialogue"]: f["judgements"] for f in results["fill"]}
        listed = StudyDialogue.objects.filter(study=study, active=True)
        active = set(listed.values_list("dialogue__slug", flat=True))
        assert set(fill) == active and sum(fill.values()) == 4 and 0 in fill.values()
    again = tmp_path / "again"
    call_command(
        "analyze", "--from-csv", str(out), "--design", design, "--out", str(again), stdout=io.StringIO()
    )
    assert (again / "results.json").read_text() == (out / "results.json").read_text()


@pytest.mark.django_db
def test_the_csvs_of_two_studies_can_be_analysed_together(tmp_path):
    from debates.demo import loader

    first, second = loader.mystery_study(), loader.mystery_study(slug="mystery-debate-2")
    walk(first, 2)
    walk(second, 3)
    folders = []
    for study in (first, second):
        folders.append(tmp_path / study.slug)
        call_command("analyze", study.slug, "--out", str(folders[-1]), stdout=io.StringIO())
    merged = tmp_path / "merged"
    merged.mkdir()
    for table in ("judgements", "participants", "responses"):
        rows = [list(csv.reader(io.StringIO((f / f"{table}.csv").read_text()))) for f in folders]
        with open(merged / f"{table}.csv", "w", newline="") as handle:
            csv.writer(handle).writerows(rows[0] + rows[1][1:])
    call_command(
        "analyze", "--from-csv", str(merged), "--design", "A", "--out", str(merged), stdout=io.StringIO()
    )
    results = json.loads((merged / "results.json").read_text())
    assert results["n"]["participants"] == 5 and results["n"]["studies"] == [first.slug, second.slug]


@pytest.mark.django_db
def test_csvs_a_spreadsheet_saved_again_give_the_same_results_and_say_what_it_changed(
    mystery_study, tmp_path
):
    """The analyst opened the exports in a spreadsheet and saved them again: semicolons, a
    byte-order mark, and every timestamp in the spreadsheet's own form (day.month.year, serial
    day numbers, day/month/year). The figures are those of the exports as written, and the
    page says which columns were read otherwise."""
    from datetime import datetime

    walk(mystery_study, 4)
    out = tmp_path / "report"
    call_command("analyze", mystery_study.slug, "--out", str(out), stdout=io.StringIO())
    forms = {
        "participants": lambda t: t.strftime("%d.%m.%Y %H:%M:%S"),
        "judgements": lambda t: (
            f"{(t.replace(tzinfo=None) - datetime(1899, 12, 30)).total_seconds() / 86400:.6f}"
        ),
        "responses": lambda t: t.strftime("%d/%m/%Y %H:%M"),
    }
    saved = tmp_path / "saved"
    saved.mkdir()
    changed = []
    for table, form in forms.items():
        rows = list(csv.reader(io.StringIO((out / f"{table}.csv").read_text())))
        for i, column in enumerate(rows[0]):
            if column.endswith("_at") and any(row[i] for row in rows[1:]):
                changed.append(f"{table}.csv, column {column!r}")
                for row in rows[1:]:
                    row[i] = form(datetime.fromisoformat(row[i])) if row[i] else ""
        with open(saved / f"{table}.csv", "w", newline="", encoding="utf-8-sig") as handle:
            csv.writer(handle, delimiter=";").writerows(rows)
    assert len(changed) >= 5
    (saved / "study.json").write_bytes((out / "study.json").read_bytes())  # beside them, as exported
    again = tmp_path / "again"
    call_command(
        "analyze", "--from-csv", str(saved), "--design", "A", "--out", str(again), stdout=io.StringIO()
    )
    first, second = (json.loads((f / "results.json").read_text()) for f in (out, again))
    notes = second.pop("warnings")
    assert second == {k: v for k, v in first.items() if k != "warnings"}
    for where in changed:
        assert any(note.startswith(where) for note in notes), where
    page = (again / "report.html").read_text()
    assert "read as day/month/year" in page and "day numbers since 1899-12-30" in page


@pytest.mark.django_db
def test_bad_input_gets_a_clear_error(tmp_path, questionnaire_study):
    with pytest.raises(CommandError, match="no step the analysis knows"):
        call_command("analyze", questionnaire_study.slug, "--out", str(tmp_path / "x"))
    (tmp_path / "csvs").mkdir()
    (tmp_path / "csvs" / "judgements.csv").write_text("study,participant_id\ns,1\n")
    with pytest.raises(CommandError, match="judgements"):
        call_command(
            "analyze", "--from-csv", str(tmp_path / "csvs"), "--design", "A", "--out", str(tmp_path / "o")
        )
    with pytest.raises(CommandError, match="--design"):
        call_command("analyze", "--from-csv", str(tmp_path / "csvs"))
    with pytest.raises(CommandError, match="no study"):
        call_command("analyze", "nope")


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", "\xff"])
def test_a_study_json_that_cannot_be_read_is_left_out_with_a_warning(tmp_path, text):
    """study.json is optional: one that is not the study's configuration is left out, and said
    first on the page, rather than stopping the report."""
    from analysis.metrics import synthetic

    for name, frame in synthetic.synthetic_d(90, 5, seed=0).items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    without = build_report(tmp_path, tmp_path / "without", "D", bootstrap=20)
    (tmp_path / "study.json").write_bytes(text.encode("latin-1"))
    results = build_report(tmp_path, tmp_path / "with", "D", bootstrap=20)
    first, *rest = results.pop("warnings")
    assert first.startswith("study.json could not be read") and rest == without.pop("warnings", [])
    assert json.loads(json.dumps(results)) == json.loads(json.dumps(without))
    assert "study.json could not be read" in (tmp_path / "with" / "report.html").read_text()


@pytest.mark.django_db
class TestStoredReports:
    def test_a_report_is_computed_stored_and_shown_in_the_admin(self, experimenter, mystery_study):
        walk(mystery_study, 3)
        page = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/report/").content.decode()
        assert "No report has been computed" in page and "Compute the report" in page
        response = experimenter.post(f"/admin/studies/study/{mystery_study.pk}/report/")
        assert response.status_code == 302
        report = Report.objects.get()
        assert report.status == "queued" and report.trigger == "admin"
        busy = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/report/", HTTP_HX_REQUEST="true")
        assert "<progress" in busy.content.decode() and "<html" not in busy.content.decode()
        report_run(report_id=report.pk)
        report.refresh_from_db()
        assert report.status == "done" and report.progress == 100 and report.results["design"] == "A"
        page = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/report/").content.decode()
        assert f"/admin/studies/study/{mystery_study.pk}/report/{report.pk}/" in page and "<iframe" in page
        html = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/report/{report.pk}/")
        assert html["Content-Security-Policy"].startswith("default-src 'none'")
        assert mystery_study.title in html.content.decode()
        png = experimenter.get(
            f"/admin/studies/study/{mystery_study.pk}/report/{report.pk}/figures/accuracy.png"
        )
        assert png["Content-Type"] == "image/png" and png.content.startswith(b"\x89PNG")
        data = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/report/{report.pk}/data.zip")
        assert data["Content-Type"] == "application/zip"
        results = experimenter.get(f"/admin/studies/study/{mystery_study.pk}/report/{report.pk}/results.json")
        assert json.loads(results.content) == report.results
        assert report_run(report_id=report.pk) is None  # taken already: a duplicate task does nothing

    def test_a_report_that_fails_says_why_and_the_next_one_may_run(self, mystery_study, monkeypatch):
        report = report_request(study=mystery_study, trigger="command")
        monkeypatch.setattr("analysis.metrics.report.analyze", lambda *a, **k: 1 / 0)
        report_run(report_id=report.pk)
        report.refresh_from_db()
        assert report.status == "failed" and "ZeroDivisionError" in report.error
        assert report_request(study=mystery_study, trigger="command").pk != report.pk

    def test_only_the_last_reports_are_kept(self, mystery_study, settings):
        settings.REPORTS_KEPT = 2
        for hours in range(4):
            Report.objects.create(
                study=mystery_study,
                design="A",
                trigger="nightly",
                status="done",
                created_at=timezone.now() - timedelta(hours=hours),
            )
        assert reports_prune(study=mystery_study) == 2
        assert Report.objects.count() == 2

    def test_reports_asked_for_again_and_again_keep_the_nightly_ones(self, mystery_study, settings):
        """Anyone who may ask for a report could erase the study's nightly history by asking
        REPORTS_KEPT times."""
        settings.REPORTS_KEPT = 2
        now = timezone.now()
        for hours, trigger in enumerate(["api"] * 4 + ["nightly"] * 3):
            Report.objects.create(
                study=mystery_study,
                design="A",
                trigger=trigger,
                status="done",
                created_at=now - timedelta(hours=hours),
            )
        assert reports_prune(study=mystery_study) == 3
        kept = Report.objects.order_by("-created_at").values_list("trigger", flat=True)
        assert list(kept) == ["api", "api", "nightly", "nightly"]

    def test_the_nightly_task_queues_live_and_recently_closed_studies(self, mystery_study, pairs_study, db):
        closed_long_ago = build_study([CONSENT_STEP, DEBRIEF_STEP])  # a study the analysis does not know
        Study.objects.filter(pk=pairs_study.pk).update(
            status="closed", updated_at=timezone.now() - timedelta(days=60)
        )
        queued = reports_nightly()
        assert [r.study_id for r in queued] == [mystery_study.pk]
        assert closed_long_ago.pk not in [r.study_id for r in queued]
        assert reports_nightly()[0].pk == queued[0].pk  # still queued: not asked twice


def test_side_letters_in_lowercase_give_the_same_figures_and_are_said(tmp_path):
    """Design A's side letters (A, B) written in lowercase by hand or by a spreadsheet: read as
    the export's letters. They were compared as written, so an 'a' silently became a choice
    of neither side (Table 40's followed-bias outcome, the bias-side answers)."""
    from analysis.metrics import synthetic

    tables = synthetic.synthetic_a(80, seed=2)
    for name, frame in tables.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    before = build_report(tmp_path, tmp_path / "before", "A", bootstrap=20)
    judgements = tables["judgements"].copy()
    letters = ["culprit_side", "active_side_letter", "chosen_side", "bias_side"]
    for column in letters:
        judgements[column] = judgements[column].map(lambda v: v.lower() if isinstance(v, str) else v)
    judgements.to_csv(tmp_path / "judgements.csv", index=False)
    after = build_report(tmp_path, tmp_path / "after", "A", bootstrap=20)
    said = after.pop("warnings")
    assert [w.split(":")[0] for w in said[: len(letters)]] == [
        f"judgements.csv, column {column!r}" for column in letters
    ]
    assert said[len(letters) :] == before.pop("warnings", [])
    assert json.loads(json.dumps(after)) == json.loads(json.dumps(before))


def test_codes_the_export_never_writes_are_counted_in_the_warnings(tmp_path):
    """A winner 'a' or a status 'withdrawn' (typed by hand, another tool's codes) is left out
    of the figures, as before, but the report now says how many rows it could not use."""
    from analysis.metrics import synthetic

    tables = synthetic.synthetic_d(90, 5, seed=0)
    comparisons = tables["comparisons"].copy()
    answered = comparisons.index[comparisons["winner"].isin(["1", "2"])][:3]
    comparisons.loc[answered, "winner"] = "a"
    tables["comparisons"] = comparisons
    for name, frame in tables.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    results = build_report(tmp_path, tmp_path / "out", "D", bootstrap=20)
    assert results["warnings"][0] == (
        "comparisons.csv, column 'winner': 3 rows with a value the export never writes there "
        "(for example 'a'; it writes 1, 2 or tie): no figure counts them as any of those."
    )
    assert "3 rows with a value the export never writes" in (tmp_path / "out" / "report.html").read_text()


def test_a_study_exported_without_valid_merged_with_one_that_has_it_counts_by_the_rule(tmp_path):
    """Two design-D studies' comparisons concatenated, one exported without `valid`: its blank
    cells were read as invalid and the whole study vanished from the ranking. They get the rule
    the column stands for (a real instance, a completed, non-excluded annotator)."""
    from analysis.metrics import synthetic

    one, two = synthetic.synthetic_d(300, 5, seed=1), synthetic.synthetic_d(300, 5, seed=2)
    for name in one:
        merged = pd.concat([one[name].assign(study="s1"), two[name].assign(study="s2")], ignore_index=True)
        merged.to_csv(tmp_path / f"{name}.csv", index=False)
    whole = build_report(tmp_path, tmp_path / "whole", "D", bootstrap=20)
    comparisons = pd.read_csv(tmp_path / "comparisons.csv", dtype=str, keep_default_na=False)
    comparisons.loc[comparisons["study"] == "s2", "valid"] = ""
    comparisons.to_csv(tmp_path / "comparisons.csv", index=False)
    blanked = build_report(tmp_path, tmp_path / "blanked", "D", bootstrap=20)
    assert blanked["n"] == whole["n"] and blanked["strengths"] == whole["strengths"]


def test_an_interlocutor_in_no_comparison_that_counts_is_not_ranked_and_is_named(tmp_path):
    """Its every comparison invalid (its annotators excluded, say), it was ranked with an
    interval from the regularisation alone, without a word."""
    from analysis.metrics import synthetic

    tables = synthetic.synthetic_d(300, 5, seed=1)
    comparisons = tables["comparisons"].copy()
    gone = sorted(set(comparisons["interlocutor_1"].dropna()))[0]
    theirs = (comparisons["interlocutor_1"] == gone) | (comparisons["interlocutor_2"] == gone)
    comparisons.loc[theirs, "valid"] = "0"
    tables["comparisons"] = comparisons
    for name, frame in tables.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    results = build_report(tmp_path, tmp_path / "out", "D", bootstrap=20)
    assert gone not in results["ranking"] and gone not in results["strengths"]
    assert len(results["ranking"]) == len(set(comparisons["interlocutor_1"].dropna())) - 1
    assert any(w.startswith(f"Not ranked: {gone}, in no comparison that counts") for w in results["warnings"])


def test_a_study_exported_without_the_derived_columns_merged_with_one_that_has_them(tmp_path):
    """Design A: `signed_active_side` and `chose_a` blank for one merged study (exported
    without them) are what the codebook says they stand for, from the side letters; every
    judgement of that study had been left out, silently."""
    from analysis.metrics import synthetic

    one, two = synthetic.synthetic_a(60, seed=1), synthetic.synthetic_a(60, seed=2)

    def write(blank: bool) -> None:
        for name in one:
            second = two[name].assign(study="s2")
            if blank and name == "judgements":
                second = second.assign(signed_active_side="", chose_a="")
            merged = pd.concat([one[name].assign(study="s1"), second], ignore_index=True)
            merged.to_csv(tmp_path / f"{name}.csv", index=False)

    write(blank=False)
    whole = build_report(tmp_path, tmp_path / "whole", "A", bootstrap=20)
    write(blank=True)
    blanked = build_report(tmp_path, tmp_path / "blanked", "A", bootstrap=20)
    assert blanked["n"] == whole["n"] and blanked["n"]["analysed"] > 60
    same = ("choose_a_by_location", "accuracy")
    assert json.loads(json.dumps([blanked.get(k) for k in same])) == json.loads(
        json.dumps([whole.get(k) for k in same])
    )


def test_detection_flags_blank_for_one_merged_study_are_derived_and_missing_ones_unknown(tmp_path):
    """Design A's *_correct and followed_bias flags blank for one merged study read as 'not
    detected' (Table 43's detections halved); they come from the raw answers now. A level no
    column tells (no bias_side at all) is None in Table 43, not 0 detections."""
    from analysis.metrics import synthetic

    one, two = synthetic.synthetic_a(60, seed=1), synthetic.synthetic_a(60, seed=2)
    derived = ["followed_bias", "bias_presence_correct", "bias_side_correct", "bias_type_correct"]

    def write(edit=None) -> None:
        for name in one:
            second = two[name].assign(study="s2")
            if edit and name == "judgements":
                second = edit(second)
            pd.concat([one[name].assign(study="s1"), second], ignore_index=True).to_csv(
                tmp_path / f"{name}.csv", index=False
            )

    write()
    whole = build_report(tmp_path, tmp_path / "whole", "A", bootstrap=20)
    write(lambda j: j.assign(**dict.fromkeys(derived, "")))
    blanked = build_report(tmp_path, tmp_path / "blanked", "A", bootstrap=20)
    same = ("detection_cascade", "detection_accuracy", "detection_following")
    assert json.loads(json.dumps([blanked[k] for k in same])) == json.loads(
        json.dumps([whole[k] for k in same])
    )
    write()
    for name in ("judgements",):
        frame = pd.read_csv(tmp_path / f"{name}.csv", dtype=str, keep_default_na=False)
        frame.drop(columns=["bias_side", "bias_side_correct"]).to_csv(tmp_path / f"{name}.csv", index=False)
    without_side = build_report(tmp_path, tmp_path / "without", "A", bootstrap=20)
    rows = {r["condition"]: r for r in without_side["detection_cascade"]}
    assert rows["all"]["side"] is None and rows["all"]["type"] is None
    assert (
        rows["all"]["presence"] == {r["condition"]: r for r in whole["detection_cascade"]}["all"]["presence"]
    )
    assert "Table 43" in (tmp_path / "without" / "report.html").read_text()


def test_a_participants_table_that_also_lists_another_designs_study_is_read_for_this_one(tmp_path):
    """A folder of several studies' files: participants.csv lists a design-D study's annotators
    too. The flow and n counted them (475 entered, 431 analysed, where the figures used 131)."""
    from analysis.metrics import synthetic

    a = synthetic.synthetic_a(60, seed=1)
    for name, frame in a.items():
        frame.assign(study="mystery").to_csv(tmp_path / f"{name}.csv", index=False)
    alone = build_report(tmp_path, tmp_path / "alone", "A", bootstrap=20)
    d = synthetic.synthetic_d(90, 5, seed=0)["participants"].assign(study="pairs")
    pd.concat([a["participants"].assign(study="mystery"), d], ignore_index=True).to_csv(
        tmp_path / "participants.csv", index=False
    )
    both = build_report(tmp_path, tmp_path / "both", "A", bootstrap=20)
    assert both["exclusion_flow"] == alone["exclusion_flow"] and both["n"] == alone["n"]


@pytest.mark.parametrize("design", ["A", "B", "D"])
def test_csvs_written_back_by_r_with_na_for_missing_values_give_the_same_figures(tmp_path, design):
    """R's write.csv writes a missing value as NA (spreadsheets #N/A, SQL tools NULL): in a
    column of numbers, flags or codes the report was refused ("not a number: 'NA'")."""
    from analysis.metrics import synthetic

    make = {
        "A": lambda: synthetic.synthetic_a(60, seed=1),
        "B": lambda: synthetic.synthetic_b(40, seed=1),
        "D": lambda: synthetic.synthetic_d(120, 5, seed=1),
    }[design]
    tables = make()
    for name, frame in tables.items():
        frame.to_csv(tmp_path / f"{name}.csv", index=False)
    plain = build_report(tmp_path, tmp_path / "plain", design, bootstrap=20)
    for name, frame in tables.items():
        frame.replace("", None).to_csv(tmp_path / f"{name}.csv", index=False, na_rep="NA")
    from_r = build_report(tmp_path, tmp_path / "from_r", design, bootstrap=20)
    said = [w for w in from_r.pop("warnings", []) if w not in plain.get("warnings", [])]
    plain.pop("warnings", None)
    assert said and all("read as empty (a missing value as another tool writes it)" in w for w in said)
    assert json.loads(json.dumps(from_r)) == json.loads(json.dumps(plain))
