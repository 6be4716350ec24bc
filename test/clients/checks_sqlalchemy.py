"""SQLAlchemy 2 (ORM and Core, psycopg 3 driver) checks."""
from sqlalchemy import (BigInteger, Column, DateTime, Identity, Integer, MetaData, Table, Text, create_engine,
                        delete, func, insert, select, text, update)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.orm import Session, registry
from sqlalchemy.pool import NullPool

import harness
from harness import TABLES, VARIANTS, Thread, attempt, check, email, now, wait_blocked

A, C = 2, 8


class SA:
    """Engine, one Core Table and one mapped class (version_id_col) per table."""

    def __init__(self):
        self.engine = create_engine(
            "postgresql+psycopg://", poolclass=NullPool,
            connect_args=dict(host=harness.HOST, port=harness.PORT, user=harness.USER,
                              dbname=harness.DB, options=harness.OPTIONS))
        md = MetaData()
        reg = registry()
        self.tables, self.classes = {}, {}
        for v in VARIANTS:
            t = Table(TABLES[v], md,
                      Column("id", BigInteger, Identity(), primary_key=True),
                      Column("ts", DateTime(timezone=True), nullable=False, server_default=func.now()),
                      Column("cid", Integer, nullable=False),
                      Column("email", Text, unique=True),
                      Column("n", Integer, nullable=False, server_default="0"),
                      Column("status", Text, nullable=False, server_default="new"),
                      Column("version", Integer, nullable=False))
            cls = type(f"Pay_{v}", (), {"__repr__": lambda self: f"<{self.id}>"})
            reg.map_imperatively(cls, t, version_id_col=t.c.version)
            self.tables[v], self.classes[v] = t, cls


def _pid(session):
    return session.execute(text("SELECT pg_backend_pid()")).scalar_one()


# --- ORM ----------------------------------------------------------------------
@check("sa_orm_add", "SQLAlchemy", "Session.add() + commit(): id and version_id_col handed back")
def sa_orm_add(v, env):
    cls = env.sa.classes[v]
    with Session(env.sa.engine) as s:
        o = cls(cid=1, email="sa@example.com", ts=now())
        s.add(o)
        r = attempt(s.commit)
        out = {"commit": r, "id, version": (o.id, o.version) if r is None else None}
    out["rows"] = env.rows(v)
    return out


def _orm_update(v, env, pk):
    cls = env.sa.classes[v]
    with Session(env.sa.engine) as s:
        o = s.get(cls, pk)
        o.n, o.status = 9, "orm"
        r = attempt(s.commit)
        out = {"commit": r, "version": o.version if r is None else None}
    out["rows"] = env.rows(v)
    return out


@check("sa_orm_update_archived", "SQLAlchemy", "Session.get() an archived row, change it, commit()")
def sa_orm_update_archived(v, env):
    return _orm_update(v, env, A)


@check("sa_orm_update_current", "SQLAlchemy", "Session.get() a current row, change it, commit()")
def sa_orm_update_current(v, env):
    return _orm_update(v, env, C)


@check("sa_orm_delete_archived", "SQLAlchemy",
       "Session.delete() of an archived row (the version_id_col makes SQLAlchemy check the count)")
def sa_orm_delete_archived(v, env):
    cls = env.sa.classes[v]
    with Session(env.sa.engine) as s:
        s.delete(s.get(cls, A))
        r = attempt(s.commit)
    return {"commit": r, "rows": env.rows(v)}


def _stale(v, env, pk):
    """Two sessions load version 1; the first commits a change; the second's
    UPDATE ... WHERE version = 1 matches nothing: StaleDataError."""
    cls = env.sa.classes[v]
    with Session(env.sa.engine) as s1, Session(env.sa.engine) as s2:
        o1, o2 = s1.get(cls, pk), s2.get(cls, pk)
        o1.n = 10
        first = attempt(s1.commit)
        o2.n = 20
        second = attempt(s2.commit)
    return {"first": first, "second": second, "rows": env.rows(v, f"WHERE id = {pk}")}


@check("sa_version_stale_archived", "SQLAlchemy", "version_id_col: stale update of an archived row")
def sa_version_stale_archived(v, env):
    return _stale(v, env, A)


@check("sa_version_stale_current", "SQLAlchemy", "version_id_col: stale update of a current row")
def sa_version_stale_current(v, env):
    return _stale(v, env, C)


def _stale_concurrent(v, env, pk):
    """As _stale, but the second flushes while the first's UPDATE is
    uncommitted: it waits, then re-checks version = 1 on the new row version."""
    cls = env.sa.classes[v]
    with Session(env.sa.engine) as s1, Session(env.sa.engine) as s2:
        o1, o2 = s1.get(cls, pk), s2.get(cls, pk)
        p2 = _pid(s2)
        o1.n = 10
        first = attempt(s1.flush)

        def second():
            o2.n = 20
            s2.commit()
        t = Thread(second)
        t.start()
        waited = wait_blocked(env.admin, p2, t)
        first_commit = attempt(s1.commit)
        second_result = t.finish(env.admin)
    return {"first flush": first, "first commit": first_commit, "second": waited,
            "second commit": second_result, "rows": env.rows(v, f"WHERE id = {pk}")}


@check("sa_version_concurrent_archived", "SQLAlchemy",
       "version_id_col: two sessions update an archived row, the 2nd while the 1st is uncommitted")
def sa_version_concurrent_archived(v, env):
    return _stale_concurrent(v, env, A)


@check("sa_version_concurrent_current", "SQLAlchemy",
       "version_id_col: two sessions update a current row, the 2nd while the 1st is uncommitted")
def sa_version_concurrent_current(v, env):
    return _stale_concurrent(v, env, C)


@check("sa_with_for_update_nowait_archived", "SQLAlchemy",
       "select().with_for_update() of an archived row; a 2nd session's with_for_update(nowait=True)")
def sa_with_for_update_nowait(v, env):
    cls = env.sa.classes[v]
    with Session(env.sa.engine) as s1, Session(env.sa.engine) as s2:
        first = attempt(lambda: s1.execute(select(cls.id).where(cls.id == A).with_for_update()).scalar_one())
        second = attempt(lambda: s2.execute(select(cls.id).where(cls.id == A)
                                            .with_for_update(nowait=True)).scalar_one())
        s1.rollback()
        s2.rollback()
    return {"first": first, "second": second}


# --- Core ---------------------------------------------------------------------
def _core(env, stmt, rows=True):
    with env.sa.engine.begin() as c:
        r = c.execute(stmt)
        return sorted(tuple(x) for x in r.all()) if rows else r.rowcount


@check("sa_core_insert_returning", "SQLAlchemy", "insert().values([3 rows]).returning(id)")
def sa_core_insert_returning(v, env):
    t = env.sa.tables[v]
    r = attempt(_core, env, insert(t).values(
        [dict(cid=1, email=f"c{i}@example.com", ts=now(), version=1) for i in range(3)]).returning(t.c.id))
    return {"returning": r, "rows": env.rows(v)}


@check("sa_core_update_returning", "SQLAlchemy", "update().where(cid == 1).values(n = n + 1).returning(id, n)")
def sa_core_update_returning(v, env):
    t = env.sa.tables[v]
    r = attempt(_core, env, update(t).where(t.c.cid == 1).values(n=t.c.n + 1).returning(t.c.id, t.c.n))
    return {"returning": r, "rows": env.rows(v)}


@check("sa_core_delete_returning", "SQLAlchemy", "delete().where(cid == 2).returning(id)")
def sa_core_delete_returning(v, env):
    t = env.sa.tables[v]
    r = attempt(_core, env, delete(t).where(t.c.cid == 2).returning(t.c.id))
    return {"returning": r, "rows": env.rows(v)}


def _upsert(v, env, values, target, do_update):
    t = env.sa.tables[v]
    stmt = pg_insert(t).values([dict(cid=1, ts=now(), version=1, **x) for x in values])
    if do_update:
        stmt = stmt.on_conflict_do_update(index_elements=[target],
                                          set_=dict(n=t.c.n + stmt.excluded.n, status="upserted"))
    else:
        stmt = stmt.on_conflict_do_nothing(index_elements=[target] if target else None)
    r = attempt(_core, env, stmt.returning(t.c.id, t.c.email, t.c.n))
    return {"returning": r, "rows": env.rows(v)}


for _name, _what, _vals, _target in [
        ("pk_current", "id of a current row", [dict(id=C, email="a@example.com", n=5)], "id"),
        ("pk_archived", "id of an archived row", [dict(id=A, email="a@example.com", n=5)], "id"),
        ("email_current", "UNIQUE email of a current row", [dict(id=501, email=email(C), n=5)], "email"),
        ("email_archived", "UNIQUE email of an archived row", [dict(id=501, email=email(A), n=5)], "email")]:
    for _upd in (False, True):
        def _fn(v, env, _vals=_vals, _target=_target, _upd=_upd):
            return _upsert(v, env, _vals + [dict(id=500, email="new@example.com", n=1)], _target, _upd)
        _kind = "do_update" if _upd else "do_nothing"
        check(f"sa_on_conflict_{_kind}_{_name}", "SQLAlchemy",
              f"insert().on_conflict_{_kind}(index_elements=['{_target}']) of a row clashing with the "
              f"{_what}, and a new row; RETURNING")(_fn)


@check("sa_on_conflict_do_nothing_no_target_archived", "SQLAlchemy",
       "insert().on_conflict_do_nothing() (no target) of rows clashing with an archived row's id, "
       "another's email, and a new row")
def sa_on_conflict_no_target(v, env):
    return _upsert(v, env, [dict(id=A, email="a@example.com", n=5), dict(id=502, email=email(3), n=5),
                            dict(id=500, email="new@example.com", n=1)], None, False)


@check("sa_orm_update_after_run", "SQLAlchemy",
       "Session.get() a row due for the archive, archive_cluster_run() moves it, change it, commit()")
def sa_orm_update_after_run(v, env):
    cls = env.sa.classes[v]
    (due,) = env.add_due(v, 1)
    with Session(env.sa.engine) as s:
        o = s.get(cls, due)
        env.info = {"rows moved": env.run(v)}
        o.n = 3
        r = attempt(s.commit)
    return {"commit": r, "rows": env.rows(v)}


@check("sa_on_conflict_do_nothing_constraint_archived", "SQLAlchemy",
       "insert().on_conflict_do_nothing(constraint='<t>_email_key') of a row clashing with an archived "
       "row's UNIQUE email, and a new row")
def sa_on_conflict_constraint(v, env):
    t = env.sa.tables[v]
    stmt = pg_insert(t).values([dict(id=501, cid=1, ts=now(), version=1, email=email(A), n=5),
                                dict(id=500, cid=1, ts=now(), version=1, email="new@example.com", n=1)])
    stmt = stmt.on_conflict_do_nothing(constraint=f"{TABLES[v]}_email_key")
    r = attempt(_core, env, stmt.returning(t.c.id, t.c.email, t.c.n))
    return {"returning": r, "rows": env.rows(v)}


@check("sa_on_conflict_do_update_sets_archived_email", "SQLAlchemy",
       "insert().on_conflict_do_update(index_elements=['id'], set_ email = excluded.email) meeting a current "
       "row, the new email an archived row's")
def sa_on_conflict_sets_archived_email(v, env):
    t = env.sa.tables[v]
    stmt = pg_insert(t).values([dict(id=C, cid=1, ts=now(), version=1, email=email(A), n=5)])
    stmt = stmt.on_conflict_do_update(index_elements=["id"], set_=dict(email=stmt.excluded.email))
    r = attempt(_core, env, stmt.returning(t.c.id, t.c.email))
    return {"returning": r, "rows": env.rows(v)}
