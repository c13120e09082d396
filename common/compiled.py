"""Querysets of a fixed shape, compiled once per process and database alias.

Measured on the benchmarks (issue #12): for the small reads every request makes (a
participant by token, a live turn with its session, debaters and claim), compiling the
query (`select_related` joins, converters) cost the server two to three times running it.
A `CompiledQuery` builds its queryset the first time it runs, keeps the SQL and
what Django needs to turn rows into model instances (including `select_related` ones), and
afterwards only runs the SQL with the new values (on any connection of that alias: the SQL
does not depend on the connection; psycopg prepares it per connection itself).

The values must be plain (ids, strings) and reach the SQL unchanged: when the query is
compiled, each is replaced by a distinct stand-in and found among the parameters; a queryset
whose parameters are not exactly its values (a transformed value, a parameter of its own) is
run through the ORM every time instead, which is correct, only slower
(`tests/common/test_compiled.py` checks that every query of ours compiles).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators


@dataclass
class _Compiled:
    sql: str
    order: tuple[str, ...] | None  # the values' names in the SQL's parameter order; None: use the ORM
    compiler: object = None
    model: type[Model] | None = None
    init_list: list[str] | None = None
    fields: slice | None = None
    populators: list | None = None
    converters: dict | None = None


class CompiledQuery:
    """`CompiledQuery(lambda *, a, b: Model.objects.filter(a=a, b=b))`; `.one(a=1, b="x")`."""

    def __init__(self, build: Callable[..., QuerySet]) -> None:
        self.build = build
        self._alias: str | None = None
        self._compiled: _Compiled | None = None  # the SQL is the same on every connection of the alias

    def rows(self, **values) -> list[Model]:
        """The queryset's instances for these values, in its order."""
        if self._alias is None:  # the database the queryset reads (or locks) on: asked once
            self._alias = self.build(**values).db
        alias = self._alias
        connection = connections[alias]
        compiled = self._compiled
        if compiled is None:
            compiled = self._compiled = self._compile(alias, values)
        if compiled.order is None:
            return list(self.build(**values))
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, [values[name] for name in compiled.order])
            rows = cursor.fetchall()
        if compiled.converters:
            rows = compiled.compiler.apply_converters(rows, compiled.converters)
        found = []
        for row in rows:
            obj = compiled.model.from_db(alias, compiled.init_list, row[compiled.fields])
            for populator in compiled.populators:
                populator.populate(row, obj)
            found.append(obj)
        return found

    def one(self, **values) -> Model | None:
        """The one instance for these values; None when there is none (or more than one)."""
        found = self.rows(**values)
        return found[0] if len(found) == 1 else None

    def is_compiled_on(self, connection) -> bool:
        compiled = self._compiled
        return compiled is not None and compiled.order is not None and self._alias == connection.alias

    def _compile(self, alias: str, values: dict) -> _Compiled:
        """Compile with a distinct stand-in for each value (the call's own values may be equal,
        and then would not tell which parameter is which), and find each in the parameters."""
        probes = _probes(values)
        compiler = self.build(**(probes or values)).query.get_compiler(alias)
        try:
            sql, params = compiler.as_sql()
        except (EmptyResultSet, FullResultSet):  # a range lookup ruled out by the stand-in itself
            return _Compiled(sql="", order=None)
        by_probe = {probe: name for name, probe in (probes or {}).items()}
        order = tuple(by_probe.get(param) for param in params)
        if probes is None or len(params) != len(values) or None in order or len(set(order)) != len(order):
            return _Compiled(sql=sql, order=None)
        select, klass_info = compiler.select, compiler.klass_info
        first, last = klass_info["select_fields"][0], klass_info["select_fields"][-1] + 1
        return _Compiled(
            sql=sql,
            order=order,
            compiler=compiler,
            model=klass_info["model"],
            init_list=[column[0].target.attname for column in select[first:last]],
            fields=slice(first, last),
            populators=get_related_populators(klass_info, select, alias),
            converters=compiler.get_converters([column[0] for column in select[: compiler.col_count]]),
        )


def _probes(values: dict) -> dict | None:
    """A distinct value of the same type for each plain id or string; None for anything else."""
    probes = {}
    for i, (name, value) in enumerate(values.items()):
        if isinstance(value, bool) or not isinstance(value, int | str):
            return None
        probes[name] = -7919 * (i + 1) if isinstance(value, int) else f"compiled-probe-{i}"
    return probes
