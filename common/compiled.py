"""Querysets of a fixed shape, compiled once per process and database alias.

Measured on the benchmarks (issue #12): for the small reads every request makes (a
participant by token, a live turn with its session, debaters and claim), compiling the
query (`select_related` joins, converters) cost the server two to three times running it.
A `CompiledQuery` builds its queryset the first time it runs, keeps the SQL and
what Django needs to turn rows into model instances (including `select_related` ones), and
afterwards only runs the SQL with the new values (on any connection of that alias: the SQL
does not depend on the connection; psycopg prepares it per connection itself).

The values must be plain (ids, strings), or lists of ids or strings (for `__in`), and reach
the SQL unchanged: when the query is compiled, each is replaced by a distinct stand-in and
found among the parameters; a queryset whose parameters are not exactly its values (a
transformed value, a parameter of its own) is run through the ORM every time instead, which
is correct, only slower (`tests/common/test_compiled.py` checks that every query of ours
compiles). A list (for `__in`, which gives one placeholder per value) is padded to a power of
two (`common.statements.padded`) and the query compiled once for each such length: the turns
of a burst are read together (bench/live).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.core.exceptions import EmptyResultSet, FullResultSet
from django.db import connections
from django.db.models import Model, QuerySet
from django.db.models.query import get_related_populators

from common.statements import padded


@dataclass
class _Compiled:
    sql: str
    # Where each of the SQL's parameters comes from, in order: (a value's name, its index in
    # a list value or None); None: use the ORM.
    order: tuple[tuple[str, int | None], ...] | None
    compiler: object = None
    model: type[Model] | None = None
    init_list: list[str] | None = None
    fields: slice | None = None
    populators: list | None = None
    converters: dict | None = None


Values = dict[str, object]
_LISTS = (list, tuple, set, frozenset)  # values for `__in`, run as lists


class CompiledQuery:
    """`CompiledQuery(lambda *, a, b: Model.objects.filter(a=a, pk__in=b))`; `.one(a=1, b=[2])`."""

    def __init__(self, build: Callable[..., QuerySet]) -> None:
        self.build = build
        self._alias: str | None = None
        # By the lengths of its list values: the SQL is the same on every connection of the alias.
        self._compiled: dict[tuple[int, ...], _Compiled] = {}

    def rows(self, **values) -> list[Model]:
        """The queryset's instances for these values, in its order."""
        values = {name: padded(v) if isinstance(v, _LISTS) else v for name, v in values.items()}
        if self._alias is None:  # the database the queryset reads (or locks) on: asked once
            self._alias = self.build(**values).db
        alias = self._alias
        connection = connections[alias]
        shape = tuple(len(v) for v in values.values() if isinstance(v, list))
        compiled = self._compiled.get(shape)
        if compiled is None:
            compiled = self._compiled[shape] = self._compile(alias, values)
        if compiled.order is None:
            return list(self.build(**values))
        params = [values[name] if index is None else values[name][index] for name, index in compiled.order]
        with connection.cursor() as cursor:
            cursor.execute(compiled.sql, params)
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
        """Whether every shape it ran with so far took the compiled path on this connection."""
        return (
            bool(self._compiled)
            and self._alias == connection.alias
            and all(compiled.order is not None for compiled in self._compiled.values())
        )

    def _compile(self, alias: str, values: Values) -> _Compiled:
        """Compile with a distinct stand-in for each value (the call's own values may be equal,
        and then would not tell which parameter is which), and find each in the parameters."""
        probes = _probes(values)
        if probes is None:
            return _Compiled(sql="", order=None)
        compiler = self.build(**{name: probe for name, (probe, _) in probes.items()}).query.get_compiler(
            alias
        )
        try:
            sql, params = compiler.as_sql()
        except (EmptyResultSet, FullResultSet):  # a range lookup ruled out by the stand-in itself
            return _Compiled(sql="", order=None)
        where = {stand_in: place for _, places in probes.values() for stand_in, place in places}
        order = tuple(where.get(param) for param in params)
        if len(params) != len(where) or None in order or len(set(order)) != len(order):
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


def _probes(values: Values) -> dict | None:
    """For each value, a stand-in of the same type (a list of them for a list) and where each
    stand-in goes: {name: (stand-in, [(stand-in, (name, index or None)), …])}; None when a
    value is neither a plain id or string nor a list of them."""
    probes: dict = {}
    count = 0

    def stand_in(value):
        nonlocal count
        count += 1
        if isinstance(value, bool) or not isinstance(value, int | str):
            raise TypeError
        return -7919 * count if isinstance(value, int) else f"compiled-probe-{count}"

    try:
        for name, value in values.items():
            if isinstance(value, list):
                items = [stand_in(item) for item in value]
                probes[name] = (items, [(item, (name, i)) for i, item in enumerate(items)])
            else:
                item = stand_in(value)
                probes[name] = (item, [(item, (name, None))])
    except TypeError:
        return None
    return probes
