"""The claim import, JSON and CSV: problems named by line, judged claims protected."""

import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from debates.imports import ImportInvalid
from debates.live.imports import claims_import
from debates.models import Claim

HEADER = "slug,text,truth,domain,side,source_title,source_excerpt,source_url\n"


def claim(slug="sea-salt", **overrides) -> dict:
    return {
        "slug": slug,
        "text": "Sea salt has less sodium than table salt by weight.",
        "truth": False,
        "domain": "nutrition",
        "sources": {
            "true": [{"title": "Mineral salts", "excerpt": "Coarse crystals weigh less per spoon."}],
            "false": [
                {
                    "title": "Sodium by weight",
                    "excerpt": "Both are mostly sodium chloride.",
                    "url": "https://x",
                }
            ],
        },
        **overrides,
    }


def document(*claims) -> str:
    return json.dumps({"format": "rostrum.claims/1", "claims": list(claims) or [claim()]}, indent=2)


def problems(text: str, filename: str = "") -> list[str]:
    with pytest.raises(ImportInvalid) as info:
        claims_import(text=text, filename=filename)
    return [str(p) for p in info.value.problems]


@pytest.mark.django_db
class TestJSON:
    def test_a_valid_file_imports_claims_with_their_sources(self):
        summary = claims_import(text=document())
        assert (summary.created, summary.updated) == (1, 0)
        c = Claim.objects.get()
        assert c.truth is False and c.true_side == "false"
        assert c.sources_for("false") == [
            {"title": "Sodium by weight", "excerpt": "Both are mostly sodium chloride.", "url": "https://x"}
        ]

    def test_importing_again_updates(self):
        claims_import(text=document())
        summary = claims_import(text=document(claim(domain="food")))
        assert (summary.created, summary.updated) == (0, 1)
        assert Claim.objects.get().domain == "food"
        assert (
            str(claims_import(text=document(claim(domain="food")))) == "claims: 0 new, 0 updated, 1 unchanged"
        )

    @pytest.mark.parametrize(
        "overrides, message",
        [
            ({"truth": "false"}, "claims[0].truth: must be true or false (without quotes)"),
            ({"text": ""}, "claims[0].text: must not be empty"),
            ({"slug": "Sea Salt"}, "claims[0].slug: use lowercase"),
            ({"sources": {"true": [{"title": "x"}]}}, "claims[0].sources.true[0]: missing field 'excerpt'"),
            ({"sources": {"maybe": []}}, "claims[0].sources.maybe: unknown field"),
            ({"domain": "d" * 41}, "claims[0].domain: is longer than 40 characters"),
        ],
    )
    def test_fields_are_checked_with_their_line(self, overrides, message):
        found = problems(document(claim(**overrides)))
        assert any(message in p for p in found), found
        assert all(p.startswith("line ") for p in found)
        assert not Claim.objects.exists()

    def test_a_nul_in_text_is_refused_with_its_line(self):
        """PostgreSQL refuses NUL in text: the file passed the checks, then the write failed (a
        500 on the admin's import page)."""
        text = document(claim(), claim(slug="nul", text="Before\u0000after."))
        line = next(n for n, text_line in enumerate(text.splitlines(), 1) if "Before" in text_line)
        assert problems(text) == [
            f"line {line}: not valid JSON: a control character (U+0000) is not allowed in text"
        ]
        assert not Claim.objects.exists()

    def test_a_claim_participants_judged_cannot_change_its_truth(self, claim_study):
        from tests.support.cast import Walker

        w = Walker(claim_study)
        w.enter()
        w.walk(stop_before="Claim 1 of 2")
        w.page()
        from debates.models import LiveSession

        judged = LiveSession.objects.get().claim
        flipped = {
            "slug": judged.slug,
            "text": judged.text,
            "truth": not judged.truth,
            "domain": judged.domain,
        }
        found = problems(document(flipped))
        assert any("participants have judged this claim" in p for p in found)


@pytest.mark.django_db
class TestCSV:
    def test_one_row_per_source(self):
        text = HEADER + (
            "sea-salt,Sea salt has less sodium.,false,nutrition,true,Mineral salts,Coarse crystals.,\n"
            "sea-salt,,,,false,Sodium by weight,Mostly NaCl.,https://x\n"
            "bare,A claim without sources.,true,misc,,,,\n"
        )
        summary = claims_import(text=text, filename="claims.csv")
        assert summary.created == 2
        salt = Claim.objects.get(slug="sea-salt")
        assert len(salt.sources_true) == len(salt.sources_false) == 1
        assert Claim.objects.get(slug="bare").truth is True

    def test_errors_name_the_csv_line_and_column(self):
        text = HEADER + (
            "sea-salt,Sea salt has less sodium.,false,nutrition,true,Mineral salts,Coarse crystals.,\n"
            "sea-salt,Another text,,,false,Sodium,Mostly NaCl.,\n"
            "other,Text,maybe,misc,,,,\n"
            "short,row\n"
        )
        found = problems(text, "claims.csv")
        assert "line 3, text: differs from the first row of 'sea-salt' (line 2)" in found
        assert "line 4, truth: must be true or false" in found
        assert "line 5: has 2 columns, expected 8" in found
        assert not Claim.objects.exists()

    def test_a_refused_first_row_is_reported_once_not_again_for_the_claims_other_sources(self):
        text = HEADER + (
            "honey,Honey keeps for decades.,yes,food,true,Why honey keeps,Low in water.,\n"
            "honey,,,,false,Storing honey,Open honey ferments.,\n"
            "honey,,,,maybe,Third,Its side is wrong.,\n"
        )
        assert problems(text, "claims.csv") == [
            "line 2, truth: must be true or false",
            "line 4, side: must be true or false",
        ]

    def test_a_file_saved_by_excel_as_csv_utf8_imports(self, tmp_path):
        """Excel's "CSV UTF-8" starts with a byte-order mark and ends lines with CRLF; the header
        was refused as not exactly the columns it was."""
        text = "\ufeff" + (
            HEADER
            + "sea-salt,Sea salt has less sodium.,false,nutrition,true,Mineral salts,Coarse crystals.,\n"
        ).replace("\n", "\r\n")
        assert claims_import(text=text, filename="claims.csv").created == 1
        path = tmp_path / "claims.csv"
        path.write_bytes(text.replace("sea-salt", "rock-salt").encode("utf-8"))
        call_command("import_claims", str(path))
        assert set(Claim.objects.values_list("slug", flat=True)) == {"sea-salt", "rock-salt"}

    def test_a_control_character_in_a_cell_is_refused_with_its_line_and_column(self):
        text = HEADER + (
            "sea-salt,Sea salt has less sodium.,false,nutrition,true,Mineral salts,Coarse crystals.,\n"
            "tea,Tea dehydrates you.,false,health,false,Fluid balance,Tea counts\x00 as fluid.,\n"
        )
        found = problems(text, "claims.csv")
        assert found == ["line 3, source_excerpt: a control character (U+0000) is not allowed in text"]
        assert not Claim.objects.exists()

    def test_a_wrong_header_is_refused(self):
        assert problems("slug,text\nx,y\n", "c.csv") == ["line 1, header: must be exactly: " + HEADER.strip()]

    def test_the_command_imports_the_demo_claims(self):
        call_command("import_claims", "debates/demo/claims.json")
        assert Claim.objects.count() == 6
        with pytest.raises(CommandError):
            call_command("import_claims", "no-such-file.json")
