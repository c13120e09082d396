"""Fixed SQL statements for the few writes every participant request makes.

Measured on the arrivals benchmark (issue #12, py-spy on a server worker): for the small
UPDATEs and INSERTs of serving and answering a page, building the statement through the
ORM (cloning querysets, compiling, preparing each value) cost about four times running it.
A `Statement` is written once, with its table and column names taken from the models (so a
renamed field or table is followed, and a field that does not exist fails at once), and
run through Django's cursor: the same connection, transaction and placeholders as the ORM,
on PostgreSQL and SQLite alike. Its values are passed through the fields' own
`get_db_prep_save`, as the ORM does.

Only for writes whose shape never changes and whose rows no signal or `save()` override
needs to see; everything else goes through the ORM.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cached_property

from django.db import connections, router
from django.db.models import Model


def padded(values: Sequence) -> list:
    """The values of an `IN (…)` list, repeated at the end up to the next power of two: the
    statement's text depends on the list's length, and a burst's lists of 1 to 100 values
    then take 8 texts rather than 100 (each built, and prepared by the database, once). A
    repeated value changes nothing in `IN`."""
    values = list(values)
    size = 1
    while size < len(values):
        size *= 2
    return values + values[-1:] * (size - len(values))


class Statement:
    """`UPDATE table SET set… WHERE where…` or `INSERT INTO table (columns…) VALUES …`.

    `sets` and `columns` name fields whose values are passed at run time (`None` for NULL);
    `where` names fields compared with `=` to values passed at run time, `where_in` a field
    that must be one of a list of values passed at run time (an UPDATE of several rows), and
    `where_null` fields that must be NULL; `literal_nulls` are fields set to NULL by the
    statement itself.
    """

    def __init__(
        self,
        model: type[Model],
        *,
        sets: Sequence[str] = (),
        literal_nulls: Sequence[str] = (),
        where: Sequence[str] = (),
        where_null: Sequence[str] = (),
        where_in: str = "",
        insert: Sequence[str] = (),
    ) -> None:
        if bool(insert) == bool(sets or literal_nulls):
            raise ValueError("a statement either inserts columns or sets fields")
        self.model = model
        self.sets, self.literal_nulls = tuple(sets), tuple(literal_nulls)
        self.where, self.where_null, self.insert = tuple(where), tuple(where_null), tuple(insert)
        self.where_in = where_in

    @cached_property
    def _fields(self) -> dict:
        meta = self.model._meta
        names = {*self.sets, *self.literal_nulls, *self.where, *self.where_null, *self.insert}
        names |= {self.where_in} if self.where_in else set()
        return {name: meta.pk if name == "pk" else meta.get_field(name) for name in names}

    def _column(self, connection, name: str) -> str:
        return connection.ops.quote_name(self._fields[name].column)

    def _sql(self, connection, rows: int = 1, among: int = 0) -> str:
        table = connection.ops.quote_name(self.model._meta.db_table)
        column = lambda name: self._column(connection, name)  # noqa: E731
        if self.insert:
            one = "(" + ", ".join(["%s"] * len(self.insert)) + ")"
            names = ", ".join(column(name) for name in self.insert)
            # Names come from the models' meta, quoted; every value is a parameter.
            return f"INSERT INTO {table} ({names}) VALUES " + ", ".join([one] * rows)  # noqa: S608
        sets = [f"{column(name)} = %s" for name in self.sets]
        sets += [f"{column(name)} = NULL" for name in self.literal_nulls]
        conditions = [f"{column(name)} = %s" for name in self.where]
        conditions += [f"{column(name)} IS NULL" for name in self.where_null]
        if self.where_in:
            conditions.append(f"{column(self.where_in)} IN ({', '.join(['%s'] * among)})")
        where = " AND ".join(conditions) or "1 = 1"
        return f"UPDATE {table} SET {', '.join(sets)} WHERE {where}"  # noqa: S608 - as above

    def _prepared(self, connection, names: Sequence[str], values: Sequence) -> list:
        if len(values) != len(names):
            raise ValueError(f"expected {len(names)} values, got {len(values)}")
        fields = self._fields
        return [
            None if value is None else fields[name].get_db_prep_save(value, connection)
            for name, value in zip(names, values, strict=True)
        ]

    def update(self, sets: Sequence = (), where: Sequence = (), among: Sequence = ()) -> int:
        """Run the UPDATE (`among`: the values of `where_in`, one at least); the number of rows
        it changed."""
        if bool(self.where_in) != bool(among):
            raise ValueError("values for where_in, and only for it, are required")
        connection = connections[router.db_for_write(self.model)]
        params = self._prepared(connection, self.sets, sets) + self._prepared(connection, self.where, where)
        among = padded(among)
        params += self._prepared(connection, [self.where_in] * len(among), among)
        with connection.cursor() as cursor:
            cursor.execute(self._sql_for(connection, 1, len(among)), params)
            return cursor.rowcount

    def insert_rows(self, rows: Sequence[Sequence], returning: bool = False) -> list:
        """Run the INSERT for these rows (one statement); nothing for no rows. With
        `returning`, the new rows' primary keys, in the rows' order: read with RETURNING
        where the database has it (PostgreSQL, SQLite 3.35 or later), else one row at a time
        by the cursor's `lastrowid` (an older SQLite, which Django 5.2 still supports)."""
        if not rows:
            return []
        connection = connections[router.db_for_write(self.model)]
        if returning and not connection.features.can_return_columns_from_insert:
            keys = []
            with connection.cursor() as cursor:
                for row in rows:
                    cursor.execute(self._sql_for(connection, 1), self._prepared(connection, self.insert, row))
                    keys.append(cursor.lastrowid)
            return keys
        params = []
        for row in rows:
            params += self._prepared(connection, self.insert, row)
        sql = self._sql_for(connection, len(rows))
        if returning:
            sql += f" RETURNING {connection.ops.quote_name(self.model._meta.pk.column)}"
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return [row[0] for row in cursor.fetchall()] if returning else []

    def insert_new(self, obj: Model) -> Model:
        """Insert a new, unsaved instance of the model (its `insert` columns, read from the
        instance, defaults included) and give it its primary key, as `save()` would without
        its signals: for a statement that inserts every column the model stores."""
        row = [getattr(obj, self._fields[name].attname) for name in self.insert]
        (obj.pk,) = self.insert_rows([row], returning=True)
        obj._state.adding = False
        obj._state.db = router.db_for_write(self.model)
        return obj

    @classmethod
    def every_column(cls, model: type[Model]) -> Statement:
        """An INSERT of every stored column of `model` but its automatic primary key."""
        names = [field.name for field in model._meta.concrete_fields if not field.primary_key]
        return cls(model, insert=names)

    def _sql_for(self, connection, rows: int, among: int = 0) -> str:
        cache = self.__dict__.setdefault("_cache", {})
        key = (connection.vendor, rows, among)
        sql = cache.get(key)
        if sql is None:
            sql = cache[key] = self._sql(connection, rows, among)
        return sql
