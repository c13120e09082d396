"""Development tools shared by the tests and the benchmarks, never imported by the
application: an OpenAI-compatible model server and a parser of participant pages' forms."""
