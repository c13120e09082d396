"""The analysts' API: token authentication, who sees which study, live progress, tables as
JSON pages and streamed CSV, pseudonyms without the permission, reports and their requests,
and an OpenAPI schema."""

import csv
import io

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from analysis.exports import TABLES
from analysis.models import Report
from tests.support.cast import Walker, user_with_password
from tests.support.downloads import streamed_body


def client_for(user: User) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return client


def staff(username: str, *codenames: str) -> User:
    user = user_with_password(username, is_staff=True)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)


def finish(study, n: int = 1) -> list[Walker]:
    walkers = [Walker(study) for _ in range(n)]
    for w in walkers:
        w.enter()
        w.walk()
    return walkers


@pytest.mark.django_db
class TestAccess:
    def test_without_a_token_nothing_is_shown(self, mystery_study):
        for path in ["/api/v1/studies/", f"/api/v1/studies/{mystery_study.slug}/tables/participants/"]:
            assert APIClient().get(path).status_code == 401
            bad = APIClient()
            bad.credentials(HTTP_AUTHORIZATION="Token not-a-real-token")
            assert bad.get(path).status_code == 401

    def test_the_schema_needs_a_token_like_the_rest_of_the_api(self):
        assert APIClient().get("/api/v1/schema/").status_code == 401
        assert client_for(staff("reader")).get("/api/v1/schema/").status_code == 200

    def test_head_is_answered_wherever_get_is(self, mystery_study):
        client = client_for(staff("lead", "view_study"))
        report = Report.objects.create(
            study=mystery_study, design="A", trigger=Report.Trigger.API, created_at=timezone.now()
        )
        base = f"/api/v1/studies/{mystery_study.slug}/"
        for path in [
            "/api/v1/",
            "/api/v1/schema/",
            "/api/v1/studies/",
            base,
            f"{base}progress/",
            f"{base}tables/",
            f"{base}tables/participants/",
            f"{base}tables/participants.csv",
            f"{base}report/",
            f"/api/v1/reports/{report.pk}/",
        ]:
            get, head = client.get(path), client.head(path)
            assert head.status_code == get.status_code != 405, path
            assert head["Content-Type"] == get["Content-Type"], path

    def test_a_user_sees_the_studies_their_permissions_allow(self, mystery_study, pairs_study):
        everything = client_for(staff("lead", "view_study"))
        assert {s["slug"] for s in everything.get("/api/v1/studies/").json()} == {
            mystery_study.slug,
            pairs_study.slug,
        }
        viewer = staff("viewer")
        pairs_study.viewers.add(viewer)
        one = client_for(viewer)
        assert [s["slug"] for s in one.get("/api/v1/studies/").json()] == [pairs_study.slug]
        assert one.get(f"/api/v1/studies/{mystery_study.slug}/").status_code == 404
        assert one.get(f"/api/v1/studies/{mystery_study.slug}/tables/judgements.csv").status_code == 404
        assert client_for(staff("nobody")).get("/api/v1/studies/").json() == []
        # Another study's report is answered like a report that does not exist, word for word.
        hidden = Report.objects.create(
            study=mystery_study, design="A", trigger=Report.Trigger.API, created_at=timezone.now()
        )
        not_yours, none = (
            one.get(f"/api/v1/reports/{hidden.pk}/"),
            one.get(f"/api/v1/reports/{hidden.pk + 1000}/"),
        )
        assert not_yours.status_code == none.status_code == 404
        assert not_yours.json() == none.json()
        assert everything.get(f"/api/v1/reports/{hidden.pk}/").status_code == 200


@pytest.mark.django_db
class TestData:
    def test_a_study_its_configuration_and_progress(self, mystery_study):
        finish(mystery_study)
        client = client_for(staff("lead", "view_study"))
        detail = client.get(f"/api/v1/studies/{mystery_study.slug}/").json()
        assert detail["design"] == "A" and detail["configuration"]["wpm_cap"] == 500
        progress = client.get(detail["links"]["progress"]).json()
        completed = next(s for s in progress["statuses"] if s["value"] == "completed")
        assert completed["count"] == 1
        assert sum(d["done"] for d in progress["dialogues"]) == 1

    def test_a_table_comes_in_pages_with_pseudonyms_unless_permitted(self, mystery_study):
        walkers = finish(mystery_study, 3)
        client = client_for(staff("lead", "view_study"))
        response = client.get(f"/api/v1/studies/{mystery_study.slug}/tables/participants/?page_size=2")
        assert response["Cache-Control"] == "no-store"  # participants' data: no copy kept on the way
        first = response.json()
        assert len(first["rows"]) == 2 and first["next"] and first["previous"] is None
        second = client.get(first["next"]).json()
        assert len(second["rows"]) == 1 and second["next"] is None
        rows = first["rows"] + second["rows"]
        assert {r["study"] for r in rows} == {mystery_study.slug}
        assert not {w.pid for w in walkers} & {r["prolific_pid"] for r in rows}
        raw = client_for(staff("pi", "view_study", "view_prolific_ids"))
        shown = raw.get(f"/api/v1/studies/{mystery_study.slug}/tables/participants/").json()["rows"]
        assert {r["prolific_pid"] for r in shown} == {w.pid for w in walkers}
        assert client.get(f"/api/v1/studies/{mystery_study.slug}/tables/nope/").status_code == 404
        assert (
            client.get(f"/api/v1/studies/{mystery_study.slug}/tables/participants/?page=0").status_code == 400
        )

    def test_a_table_as_csv_is_streamed_like_the_admin_export(self, mystery_study):
        finish(mystery_study, 2)
        client = client_for(staff("lead", "view_study"))
        response = client.get(f"/api/v1/studies/{mystery_study.slug}/tables/judgements.csv")
        assert response.status_code == 200 and response.streaming
        rows = list(csv.DictReader(io.StringIO(streamed_body(response))))
        assert len(rows) == 2 and rows[0]["study"] == mystery_study.slug

    def test_the_csv_table_is_csv_whatever_the_accept_header_asks_for(self, mystery_study):
        finish(mystery_study)
        client = client_for(staff("lead", "view_study"))
        path = f"/api/v1/studies/{mystery_study.slug}/tables/judgements.csv"
        for accept in ["text/csv", "application/xml", "text/html", "*/*"]:
            response = client.get(path, HTTP_ACCEPT=accept)
            assert response.status_code == 200, accept
            assert response["Content-Type"].startswith("text/csv")
            assert streamed_body(response).startswith("study,study_sha256,")
        missing = client.get(path.replace("judgements", "nope"), HTTP_ACCEPT="text/csv")
        assert missing.status_code == 404 and "No table 'nope'" in missing.json()["detail"]

    def test_an_unknown_table_name_is_repeated_only_in_part(self, mystery_study):
        client = client_for(staff("lead", "view_study"))
        for suffix in ["/", ".csv"]:
            response = client.get(f"/api/v1/studies/{mystery_study.slug}/tables/{'a' * 5000}{suffix}")
            assert response.status_code == 404
            assert f"No table '{'a' * 80}…'" in response.json()["detail"]
            assert len(response.content) < 600

    def test_an_address_the_api_does_not_have_is_a_json_404_after_authentication(self, mystery_study):
        """Django's HTML 404 page was the answer to a client of the API."""
        client = client_for(staff("lead", "view_study"))
        for path in ["reports/-1/", "studies/%C3%A9/", "nope", f"studies/{mystery_study.slug}/tables/a/b/"]:
            response = client.get(f"/api/v1/{path}")
            assert response.status_code == 404 and response["Content-Type"] == "application/json"
            assert "No such address in the API" in response.json()["detail"]
        assert APIClient().get("/api/v1/nope").status_code == 401
        # One of its addresses without the last slash is sent there, as Django did before.
        response = client.get(f"/api/v1/studies/{mystery_study.slug}/tables?x=1")
        assert response.status_code == 301
        assert response["Location"] == f"/api/v1/studies/{mystery_study.slug}/tables/?x=1"

    def test_the_browsable_apis_breadcrumbs_name_only_real_pages(self, mystery_study):
        """They read "Root › Nowhere › Studies › Nowhere › Study": each address without its last
        slash resolved to the catch-all (the researcher walk)."""
        from rest_framework.utils.breadcrumbs import get_breadcrumbs

        crumbs = get_breadcrumbs(f"/api/v1/studies/{mystery_study.slug}/")
        assert [name for name, _url in crumbs] == ["Root", "Studies", "Study"]
        client = client_for(staff("lead", "view_study"))
        assert client.post("/api/v1/nope", {}).status_code == 404  # still a JSON 404, not a CSRF 403

    def test_the_pages_of_a_table_hold_the_rows_of_the_whole_table(self, mystery_study):
        finish(mystery_study, 3)
        study_rows = list(TABLES["responses"].rows_for(mystery_study))
        whole = [(r["participant_id"], r["position"], r["key"], r["value"]) for r in study_rows]
        assert len(whole) > 14 and len(whole) % 7
        client = client_for(staff("pi", "view_study", "view_prolific_ids"))
        base = f"/api/v1/studies/{mystery_study.slug}/tables/responses/?page_size=7"
        last = -(-len(whole) // 7)
        for page in [1, 2, last - 1, last, last + 1, last + 50]:
            body = client.get(f"{base}&page={page}").json()
            shown = [(r["participant_id"], r["position"], r["key"], r["value"]) for r in body["rows"]]
            assert shown == whole[(page - 1) * 7 : page * 7], page
            assert (body["next"] is None) == (page >= last), page

    def test_a_late_page_reads_only_its_rows_from_the_database(self, mystery_study):
        """The page was cut from every row before it, built in Python: page 199 of 100,000
        responses took seven times as long as page 1."""
        finish(mystery_study, 2)
        client = client_for(staff("lead", "view_study"))
        base = f"/api/v1/studies/{mystery_study.slug}/tables/responses/?page_size=2"
        with CaptureQueriesContext(connection) as first:
            client.get(f"{base}&page=1")
        with CaptureQueriesContext(connection) as late:
            assert len(client.get(f"{base}&page=4").json()["rows"]) == 2
        assert any("LIMIT 3 OFFSET 6" in q["sql"] for q in late.captured_queries)
        assert len(late.captured_queries) == len(first.captured_queries)

    def test_the_schema_describes_the_api(self, mystery_study):
        client = client_for(staff("lead", "view_study"))
        schema = client.get("/api/v1/schema/?format=json").json()
        assert schema["info"]["title"] == "Rostrum analysis API"
        assert "/api/v1/studies/{slug}/tables/{name}/" in schema["paths"]


@pytest.mark.django_db
class TestReports:
    def test_asking_for_a_report_queues_one_and_only_one(
        self, mystery_study, django_capture_on_commit_callbacks
    ):
        client = client_for(staff("lead", "view_study", "add_report"))
        assert client.get(f"/api/v1/studies/{mystery_study.slug}/report/").status_code == 404
        with django_capture_on_commit_callbacks(execute=False):
            first = client.post(f"/api/v1/studies/{mystery_study.slug}/report/")
            again = client.post(f"/api/v1/studies/{mystery_study.slug}/report/")
        assert first.status_code == again.status_code == 202
        assert first.json()["id"] == again.json()["id"] and first.json()["status"] == "queued"
        assert Report.objects.count() == 1
        status = client.get(first.json()["url"]).json()
        assert status["status"] == "queued" and status["design"] == "A"

    def test_asking_needs_the_permission(self, mystery_study):
        client = client_for(staff("reader", "view_study"))
        assert client.post(f"/api/v1/studies/{mystery_study.slug}/report/").status_code == 403
        assert not Report.objects.exists()
