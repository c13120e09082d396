"""One zip with everything of a study: every table, its codebook and its configuration as
JSON. Streamed: each entry is written as it is produced, so memory stays flat."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Iterator

from django.utils import timezone

from analysis.configuration import study_configuration
from analysis.exports import TABLES, codebook_lines, csv_lines
from studies.models import Study

FLUSH_BYTES = 256 * 1024


class _Pipe:
    """A write-only file that hands what was written to the generator reading it."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.offset = 0

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        self.size += len(data)
        self.offset += len(data)
        return len(data)

    def tell(self) -> int:
        return self.offset

    def flush(self) -> None:
        pass

    def take(self) -> bytes:
        data = b"".join(self.parts)
        self.parts.clear()
        self.size = 0
        return data


def bundle_name(study: Study) -> str:
    return f"{study.slug}-export-{timezone.now():%Y%m%d-%H%M}.zip"


def bundle_chunks(study: Study, *, pseudonyms: bool = False) -> Iterator[bytes]:
    """The zip, piece by piece: `<table>.csv` for every table, `codebook.csv` (with the
    study's own items) and `study.json` (see `csv_lines` for `pseudonyms`)."""
    pipe = _Pipe()
    with zipfile.ZipFile(pipe, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        entries = [
            (f"{n}.csv", csv_lines(table, study, pseudonyms=pseudonyms)) for n, table in TABLES.items()
        ]
        entries.append(("codebook.csv", codebook_lines(study)))
        for name, lines in entries:
            with archive.open(name, "w", force_zip64=True) as entry:
                for line in lines:
                    entry.write(line.encode("utf-8"))
                    if pipe.size >= FLUSH_BYTES:
                        yield pipe.take()
            yield pipe.take()
        archive.writestr("study.json", json.dumps(study_configuration(study), indent=1, ensure_ascii=False))
    yield pipe.take()
