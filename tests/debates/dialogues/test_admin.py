"""Design A's admin: the case import page."""

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from debates.demo.mystery import CASES_FILE
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
