"""Static files in production: whitenoise's compressed, hashed-name storage, with each file's
URL looked up once per process. `{% static %}` asks the storage for every URL on every page
(two per participant page); with hashed names that is a manifest lookup, a URL join and
quoting each time (issue #12: about 2 % of a page's CPU on the arrivals benchmark)."""

from __future__ import annotations

from whitenoise.storage import CompressedManifestStaticFilesStorage


class StaticStorage(CompressedManifestStaticFilesStorage):
    def __init__(self, *args, **kwargs) -> None:
        self._urls: dict[str, str] = {}
        super().__init__(*args, **kwargs)

    def url(self, name, force=False):
        if force:
            return super().url(name, force)
        found = self._urls.get(name)
        if found is None:
            found = self._urls[name] = super().url(name)
        return found

    def load_manifest(self):
        self._urls = {}
        return super().load_manifest()

    def post_process(self, *args, **kwargs):
        self._urls = {}  # collectstatic: names are hashed anew
        yield from super().post_process(*args, **kwargs)
        self._urls = {}
