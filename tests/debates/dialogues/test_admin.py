"""Design A's admin: the case import page (and through it, the upload page every import
shares, `debates.admin_base.import_page`)."""

import logging

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from debates.admin_base import NOT_IMPORTED
from debates.demo.mystery import CASES_FILE
from debates.dialogues import admin as dialogues_admin
from debates.models import Case


@pytest.mark.django_db
class TestImportUpload:
    def test_a_bad_upload_lists_its_problems_and_imports_nothing(self, experimenter):
        upload = SimpleUploadedFile("cases.json", b'{"format": "rostrum.cases/1",\n "cases": [{"slug": 5}]}')
        response = experimenter.post("/admin/debates/case/import/", {"file": upload})
        html = response.content.decode()
        assert "Nothing was imported" in html
        assert "line 2, cases[0].slug: must be a string" in html
        assert not Case.objects.exists()

    def test_a_good_upload_imports(self, experimenter):
        upload = SimpleUploadedFile("cases.json", CASES_FILE.read_bytes())
        response = experimenter.post("/admin/debates/case/import/", {"file": upload}, follow=True)
        assert "Imported: cases: 2 new" in response.content.decode()
        assert Case.objects.count() == 2

    @pytest.mark.parametrize(
        "body, problem",
        [
            (
                b'{"format":\n' + b"1" * 5000 + b"}",
                "line 2: not valid JSON: number out of range (more than 19 digits)",
            ),
            (
                b'{"format": "rostrum.cases/1",\n "cases": [{"slug": "x\\udc00"}]}',
                "line 2: not valid JSON: \\udc00 is half of a surrogate pair, without its other half",
            ),
            (
                b'{"format": "rostrum.cases/1",\n "cases": [{"slug": "x\\u0000"}]}',
                "line 2: not valid JSON: a control character (U+0000) is not allowed in text",
            ),
        ],
        ids=["5000 digits", "lone surrogate", "NUL"],
    )
    def test_a_number_or_character_no_field_can_store_is_listed_as_a_problem(
        self, experimenter, body, problem
    ):
        """Each was a 500: Python's int() refuses 4300 digits, a lone surrogate cannot be
        written as UTF-8, and PostgreSQL refuses NUL in text."""
        response = experimenter.post(
            "/admin/debates/case/import/", {"file": SimpleUploadedFile("c.json", body)}
        )
        html = response.content.decode()
        assert response.status_code == 200 and problem in html
        assert NOT_IMPORTED not in html
        assert not Case.objects.exists()

    def test_an_unexpected_error_rolls_back_is_logged_and_says_nothing_was_imported(
        self, experimenter, monkeypatch, caplog
    ):
        def half_then_fail(*, text):
            Case.objects.create(
                slug="half-written", title="t", story="s", suspects=[], culprit="a", rival="b"
            )
            raise RuntimeError("the database refused")

        monkeypatch.setattr(dialogues_admin, "cases_import", half_then_fail)
        upload = SimpleUploadedFile("cases.json", CASES_FILE.read_bytes())
        with caplog.at_level(logging.ERROR, logger="debates.admin_base"):
            response = experimenter.post("/admin/debates/case/import/", {"file": upload})
        assert response.status_code == 200
        assert NOT_IMPORTED in response.content.decode()
        assert not Case.objects.exists()
        assert "the database refused" in caplog.text and "cases.json" in caplog.text
