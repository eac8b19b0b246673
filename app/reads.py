"""Page reads: SELECTs compiled once per database and run on the driver's own connection.

Every page view looks up its visitor, and the hot pages (home, a set, a question) read
a row or two more. Through SQLAlchemy a statement cost about 35 µs here (compile-cache lookup,
connection events, result metadata, the reader's BEGIN), through the ORM about 85 µs, and the
query itself about 6 µs on SQLite: at 50 connections that was most of a page's CPU time.

A `Query` is a Core SELECT, written with the models' tables as anywhere else, that is compiled
once for the engine's dialect; its parameters and columns go through the same type conversions
SQLAlchemy applies (`TypeEngine.bind_processor` and `result_processor`: aware UTC datetimes,
enums, booleans), and its rows become detached model instances, as if loaded and expunged. A
`Reader` holds one pooled driver connection for a page's reads and begins no transaction: each
SELECT is atomic on its own (autocommit); on SQLite it takes no lock and, in WAL mode, never waits
for a writer; on PostgreSQL it is one round trip, with no BEGIN before it nor ROLLBACK after,
awaited on the event loop (`read`, through app.db.LoopEngines).

Only SELECTs: anything that writes goes through a Session and its services (app.db).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio.to_thread
from sqlalchemy import Select, inspect
from sqlalchemy.engine import Connection, Dialect, Engine
from sqlalchemy.orm import Mapper, Session, configure_mappers, make_transient_to_detached
from sqlalchemy.util import greenlet_spawn

from app.db import loop_engines, renew_connections

T = TypeVar("T")
AnySelect = Select[*tuple[Any, ...]]
Converter = Callable[[Any], Any] | None


@dataclass
class _Compiled:
    """A statement as one dialect runs it: SQL text, parameter order and conversions."""

    sql: str
    positional: tuple[str, ...] | None  # parameter names in order (qmark, format), or named
    defaults: Mapping[str, Any]  # the statement's own literal values (CASE … THEN 1)
    binders: Mapping[str, Callable[[Any], Any]]
    column_types: tuple[Any, ...]
    dialect: Dialect
    # Set at the first run: some drivers' conversions depend on the type the database reports
    # for a column (PostgreSQL's numeric codes), as in SQLAlchemy's own result handling.
    converters: tuple[Converter, ...] | None = None

    def parameters(self, values: Mapping[str, Any]) -> Sequence[Any] | dict[str, Any]:
        """The driver's parameters for these values, converted as SQLAlchemy would."""
        merged = {**self.defaults, **values}
        for name, binder in self.binders.items():
            merged[name] = binder(merged[name])
        if self.positional is None:
            return merged
        return [merged[name] for name in self.positional]

    def converter(self, cursor: Any) -> Callable[[Sequence[Any]], tuple[Any, ...]]:
        """What converts this cursor's rows: each value to its column's Python type."""
        converters = self.converters
        if converters is None:
            codes = [column[1] for column in cursor.description]
            converters = self.converters = tuple(
                kind.dialect_impl(self.dialect).result_processor(self.dialect, code)
                for kind, code in zip(self.column_types, codes, strict=True)
            )

        def convert(row: Sequence[Any]) -> tuple[Any, ...]:
            return tuple(
                value if change is None or value is None else change(value)
                for value, change in zip(row, converters, strict=True)
            )

        return convert


class Query:
    """A SELECT compiled once per dialect; `models` turn its columns into instances, in order.

    With models, the statement must select exactly their tables' columns, each model's in its
    table's order (`select(*A.__table__.columns, *B.__table__.columns)`); a model whose primary
    key comes back NULL (an outer join that found nothing) becomes None.
    """

    def __init__(self, statement: AnySelect, *models: type) -> None:
        self.statement = statement
        self._compiled: dict[tuple[str, str], _Compiled] = {}
        self._builders = [_InstanceBuilder(model) for model in models]
        if models:
            wanted = [column for builder in self._builders for column in builder.columns]
            selected = list(statement.selected_columns)
            if [c.key for c in selected] != [c.key for c in wanted] or len(selected) != len(wanted):
                raise ValueError("a Query with models selects exactly their tables' columns")

    def compiled(self, dialect: Dialect) -> _Compiled:
        """This statement compiled for a dialect and driver (once; later calls reuse it)."""
        key = (dialect.name, dialect.driver)
        found = self._compiled.get(key)
        if found is None:
            found = self._compiled[key] = _compile(self.statement, dialect)
        return found

    def instances(self, row: Sequence[Any]) -> tuple[Any, ...]:
        """One converted row as instances of the query's models (None for a missing one)."""
        values, start = [], 0
        for builder in self._builders:
            end = start + len(builder.columns)
            values.append(builder.build(row[start:end]))
            start = end
        return tuple(values)


def _compile(statement: AnySelect, dialect: Dialect) -> _Compiled:
    compiled = statement.compile(dialect=dialect)
    if compiled.literal_execute_params or compiled.post_compile_params:
        raise ValueError("a Query cannot expand parameters at run time (IN lists): use a Session")
    binds = compiled.binds
    binders = {}
    for name, bind in binds.items():
        binder = bind.type.dialect_impl(dialect).bind_processor(dialect)
        if binder is not None:
            binders[name] = binder
    defaults = {name: bind.effective_value for name, bind in binds.items() if not bind.required}
    column_types = tuple(column.type for column in statement.selected_columns)
    positional = compiled.positiontup
    return _Compiled(
        compiled.string,
        tuple(positional) if positional else None,
        defaults,
        binders,
        column_types,
        dialect,
    )


class _InstanceBuilder:
    """Makes detached instances of one model from its table's column values, as the ORM's
    loader would but without its bookkeeping (identity map, loader state, events)."""

    def __init__(self, model: type) -> None:
        self.model = model
        self.columns = list(model.__table__.columns)  # type: ignore[attr-defined]
        self._plan: tuple[list[str], list[int], Callable[[], Any]] | None = None

    def _prepare(self) -> tuple[list[str], list[int], Callable[[], Any]]:
        # At first use, not at import: mappers configure once every model is imported.
        configure_mappers()
        mapper: Mapper[Any] = inspect(self.model)
        keys = {prop.columns[0].key: prop.key for prop in mapper.column_attrs}
        primary_key = [self.columns.index(column) for column in mapper.primary_key]
        self._plan = (
            [keys[c.key] for c in self.columns],
            primary_key,
            mapper.class_manager.new_instance,
        )
        return self._plan

    def build(self, values: Sequence[Any]) -> Any:
        """An instance holding these values, or None when its primary key is NULL."""
        keys, primary_key, new = self._plan or self._prepare()
        if all(values[index] is None for index in primary_key):
            return None
        instance = new()
        instance.__dict__.update(zip(keys, values, strict=True))
        make_transient_to_detached(instance)
        return instance


class Reader:
    """Runs Queries: on a pooled driver connection of its own (`Reader(engine)`, given back by
    `close` or `with`), or through a session's connection, in its transaction (`within`)."""

    def __init__(self, engine: Engine) -> None:
        self.dialect = engine.dialect
        self.on_driver = True  # past SQLAlchemy: its events and error handling do not see these
        self._engine = engine
        self._session_connection: Connection | None = None
        # A server database's driver would send BEGIN before the first SELECT and the pool a
        # ROLLBACK when given back: two round trips a page for nothing. Each SELECT runs on its
        # own instead (autocommit), as on SQLite (isolation_level None, app.db): the loop's
        # reads engine lends its connections so; another's is switched while held here.
        self._switches = False  # switched to autocommit here: switch back when given back
        self._connection: Any = self._lend()  # the pool's, reset when given back

    def _lend(self) -> Any:
        connection: Any = self._engine.raw_connection()
        if self.dialect.name != "sqlite" and not connection.dbapi_connection.autocommit:
            connection.dbapi_connection.autocommit = True
            self._switches = True
        return connection

    def _run(self, compiled: _Compiled, values: Mapping[str, Any], fetch: Callable[[Any], T]) -> T:
        """Execute on the driver and `fetch` from its cursor. Each SELECT stands alone, so one
        that finds its connection dead (the server restarted since it was last used, app.db
        checks only long-idle ones) runs once more on a fresh connection."""
        for attempt in (1, 2):
            cursor = self._connection.cursor()
            try:
                cursor.execute(compiled.sql, compiled.parameters(values))
                return fetch(cursor)
            except self.dialect.loaded_dbapi.Error as error:
                dead = self.dialect.is_disconnect(error, self._connection.dbapi_connection, cursor)
                if attempt == 2 or not dead:
                    raise
                # Its pool-mates most likely died with it (a restart): as SQLAlchemy does when a
                # statement of its own finds a disconnect (Connection._handle_dbapi_exception),
                # this one is closed and every connection made before now is closed and made
                # again when it is next lent, so the retry gets a fresh one.
                self._engine.pool._invalidate(self._connection, error)
                renew_connections(self._engine)
                self._connection = self._lend()
            finally:
                with contextlib.suppress(Exception):  # a dead connection's cursor may refuse
                    cursor.close()
        raise AssertionError("unreachable")

    @classmethod
    def within(cls, session: Session) -> Reader:
        """Read through the session's connection, in its transaction, as SQLAlchemy runs any
        statement (its events, its errors: a failed read on PostgreSQL aborts the session's
        transaction, which the session must know). For the routes that hold a session anyway
        and then write: they take no second connection."""
        reader = cls.__new__(cls)
        reader._session_connection = session.connection()
        reader.dialect = reader._session_connection.dialect
        reader.on_driver = False
        reader._connection = None
        return reader

    def rows(self, query: Query, **values: Any) -> list[tuple[Any, ...]]:
        """Every row of the query, converted."""
        if self._session_connection is not None:
            return [tuple(row) for row in self._session_connection.execute(query.statement, values)]
        compiled = query.compiled(self.dialect)

        def fetch(cursor: Any) -> list[tuple[Any, ...]]:
            convert = compiled.converter(cursor)
            return [convert(row) for row in cursor.fetchall()]

        return self._run(compiled, values, fetch)

    def first(self, query: Query, **values: Any) -> tuple[Any, ...] | None:
        """The query's first row, converted, or None."""
        if self._session_connection is not None:
            found = self._session_connection.execute(query.statement, values).first()
            return None if found is None else tuple(found)
        compiled = query.compiled(self.dialect)

        def fetch(cursor: Any) -> tuple[Any, ...] | None:
            row = cursor.fetchone()
            return None if row is None else compiled.converter(cursor)(row)

        return self._run(compiled, values, fetch)

    def close(self) -> None:
        """Give its own connection back to the pool (which ends what the driver began)."""
        connection, self._connection = self._connection, None
        if connection is None:
            return
        if self._switches:
            self._switches = False
            try:
                connection.dbapi_connection.autocommit = False  # as the pool lends it to sessions
            except Exception:
                connection.invalidate()  # broken meanwhile: the pool replaces it
        connection.close()

    def __enter__(self) -> Reader:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()


def runs_inline(engine: Engine) -> bool:
    """Whether reads may run on the event loop as plain calls: SQLite's (in-process, no lock
    in WAL mode, a checkout never waits). PostgreSQL's are network round trips."""
    return engine.dialect.name == "sqlite"


async def read(engine: Engine, reads: Callable[..., T], *args: Any) -> T:
    """Run `reads(reader, *args)` with a Reader: here on SQLite; on PostgreSQL on the loop too,
    through the engine's asyncio driver (app.db.LoopEngines), each round trip awaited; on a
    worker thread where there is none."""
    if runs_inline(engine):
        return _with_reader(engine, reads, *args)
    found = loop_engines(engine)
    if found is not None:
        return await greenlet_spawn(_with_reader, found.reads, reads, *args)
    return await anyio.to_thread.run_sync(_with_reader, engine, reads, *args)


def _with_reader(engine: Engine, reads: Callable[..., T], *args: Any) -> T:
    with Reader(engine) as reader:
        return reads(reader, *args)
