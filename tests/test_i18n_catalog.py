"""The translation catalogs: every participant-facing string of the German catalog is
translated (none empty, none fuzzy), keeps its placeholders, and the committed .mo file says
the same as the .po file (CI machines have no gettext tools to compile it)."""

from __future__ import annotations

import ast
import gettext
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from django.conf import settings

from studies import registry
from studies.texts import BUILT_IN_STEP_TEXTS, text_config_names

LOCALE = Path(settings.BASE_DIR) / "locale"
TEMPLATES = Path(settings.BASE_DIR) / "templates"
OTHER_LANGUAGES = [code for code, _name in settings.LANGUAGES if code != "en"]
PLACEHOLDER = re.compile(r"%\(\w+\)s|\{\w+\}")


@dataclass
class Entry:
    msgid: str = ""
    msgstr: str = ""
    msgctxt: str | None = None
    flags: set[str] = field(default_factory=set)


def parse_po(path: Path) -> list[Entry]:
    """The entries of a .po file (the header left out): msgctxt, msgid, msgstr and flags."""
    entries, current, key = [], Entry(), None
    for line in [*path.read_text(encoding="utf-8").splitlines(), ""]:
        if not line.strip():
            if key is not None and current.msgid:
                entries.append(current)
            current, key = Entry(), None
        elif line.startswith("#,"):
            current.flags |= {flag.strip() for flag in line[2:].split(",")}
        elif line.startswith("#"):
            continue
        elif line.startswith('"'):
            setattr(current, key, getattr(current, key) + ast.literal_eval(line))
        else:
            key, value = line.split(" ", 1)
            assert key in ("msgid", "msgstr", "msgctxt"), f"{path}: unexpected line {line!r}"
            setattr(current, key, ast.literal_eval(value))
    return entries


def catalog(language: str) -> list[Entry]:
    return parse_po(LOCALE / language / "LC_MESSAGES" / "django.po")


def test_the_parser_reads_an_untranslated_and_a_fuzzy_entry(tmp_path):
    po = tmp_path / "django.po"
    po.write_text(
        'msgid ""\nmsgstr "Language: de\\n"\n\n#, fuzzy, python-format\nmsgid "A %(n)s"\nmsgstr "B %(n)s"\n\n'
        'msgctxt "speaker"\nmsgid ""\n"You"\nmsgstr ""\n',
        encoding="utf-8",
    )
    first, second = parse_po(po)
    assert (first.msgid, first.msgstr, "fuzzy" in first.flags) == ("A %(n)s", "B %(n)s", True)
    assert (second.msgctxt, second.msgid, second.msgstr) == ("speaker", "You", "")


@pytest.mark.parametrize("language", OTHER_LANGUAGES)
def test_every_participant_facing_string_is_translated_and_none_is_fuzzy(language):
    entries = catalog(language)
    assert len(entries) > 100
    untranslated = [e.msgid for e in entries if not e.msgstr.strip()]
    fuzzy = [e.msgid for e in entries if "fuzzy" in e.flags]
    assert untranslated == [], f"untranslated in locale/{language}: {untranslated}"
    assert fuzzy == [], f"fuzzy in locale/{language}: {fuzzy}"


@pytest.mark.parametrize("language", OTHER_LANGUAGES)
def test_translations_keep_every_placeholder_of_their_english_text(language):
    changed = [
        (e.msgid, e.msgstr)
        for e in catalog(language)
        if sorted(PLACEHOLDER.findall(e.msgid)) != sorted(PLACEHOLDER.findall(e.msgstr))
    ]
    assert changed == []


@pytest.mark.parametrize("language", OTHER_LANGUAGES)
def test_the_committed_mo_file_is_compiled_from_the_po_file(language):
    mo = LOCALE / language / "LC_MESSAGES" / "django.mo"
    with mo.open("rb") as handle:
        compiled = gettext.GNUTranslations(handle)
    stale = [
        e.msgid
        for e in catalog(language)
        if (compiled.pgettext(e.msgctxt, e.msgid) if e.msgctxt else compiled.gettext(e.msgid)) != e.msgstr
    ]
    assert stale == [], "run `make messages` to compile the catalog"


def test_every_string_the_participant_templates_translate_is_in_the_catalog():
    known = {e.msgid for e in catalog("de")}
    pattern = re.compile(r'{% translate "([^"]+)"')
    templates = [*TEMPLATES.glob("participants/**/*.html"), *TEMPLATES.glob("debates/**/*.html")]
    used = {m for path in [TEMPLATES / "base.html", *templates] for m in pattern.findall(path.read_text())}
    assert len(used) > 50
    assert sorted(used - known) == [], "run `make messages` and translate the new strings"


def test_every_built_in_text_of_every_step_kind_is_in_the_catalog():
    """A kind's default button or question text reads in the participant's language only if
    it is in studies.texts.BUILT_IN_STEP_TEXTS (and so in the catalog)."""
    defaults = {
        kind.config_form.base_fields[name].initial
        for kind in registry.all_kinds()
        for name in text_config_names(kind)
        if kind.config_form.base_fields[name].initial
    }
    translated = {e.msgid for e in catalog("de") if e.msgstr}
    assert defaults - set(BUILT_IN_STEP_TEXTS) == set()
    assert set(BUILT_IN_STEP_TEXTS) - translated == set()
