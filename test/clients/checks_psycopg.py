"""psycopg 3 checks: COPY FROM STDIN, MERGE and other raw SQL an application sends, two transactions
meeting on a UNIQUE key, prepared statements across register, foreign keys, the ctid idiom."""
import harness
from harness import TABLES, attempt, check, connect, email, now, old, tables_read, wait_blocked

A, C = 2, 8


def _copy(v, env, data, columns="ts, cid, email, n, status"):
    def go():
        with connect() as c, c.cursor() as cur:
            with cur.copy(f"COPY {TABLES[v]} ({columns}) FROM STDIN") as cp:
                for row in data:
                    cp.write_row(row)
            return cur.rowcount
    return attempt(go)


@check("pg_copy", "psycopg",
       "cursor.copy('COPY t (...) FROM STDIN') of 40 rows (20 old, 20 new): count and content, "
       "then a run (registered tables) and the content again")
def pg_copy(v, env):
    data = [((old() if i % 2 else now()), i % 5 + 1, f"copy{i}@example.com", i, "copied") for i in range(40)]
    r = _copy(v, env, data)
    before = env.rows(v)
    moved = env.run(v)
    env.info = {"rows moved by the run after COPY": moved}
    return {"copy": r, "rows": before, "rows after a run": env.rows(v)}


@check("pg_copy_dup_email_archived", "psycopg", "COPY of rows one of which has an archived row's UNIQUE email")
def pg_copy_dup_email_archived(v, env):
    r = _copy(v, env, [(now(), 1, "c1@example.com", 0, "copied"), (now(), 1, email(A), 0, "copied")])
    return {"copy": r, "rows": env.rows(v)}


@check("pg_copy_dup_pk_archived", "psycopg", "COPY (id, ...) of rows one of which has an archived row's id")
def pg_copy_dup_pk_archived(v, env):
    r = _copy(v, env, [(100, now(), 1, "c1@example.com"), (A, now(), 1, "c2@example.com")], "id, ts, cid, email")
    return {"copy": r, "rows": env.rows(v)}


@check("pg_copy_dup_pk_current", "psycopg", "COPY (id, ...) of rows one of which has a current row's id")
def pg_copy_dup_pk_current(v, env):
    r = _copy(v, env, [(100, now(), 1, "c1@example.com"), (C, now(), 1, "c2@example.com")], "id, ts, cid, email")
    return {"copy": r, "rows": env.rows(v)}


def _sql(sql):
    def go():
        with connect() as c:
            return c.execute(sql).rowcount
    return attempt(go)


@check("pg_merge_upsert", "psycopg",
       "MERGE INTO t USING (VALUES <archived id>, <current id>, <new id>): UPDATE when matched, INSERT when not")
def pg_merge_upsert(v, env):
    t = TABLES[v]
    r = _sql(f"""MERGE INTO {t} AS p USING (VALUES ({A}, 5), ({C}, 5), (1000, 5)) AS s(id, k) ON p.id = s.id
                 WHEN MATCHED THEN UPDATE SET n = p.n + s.k, status = 'merged'
                 WHEN NOT MATCHED THEN INSERT (id, cid, email, n, status)
                     VALUES (s.id, 1, 'merge' || s.id || '@example.com', s.k, 'merged')""")
    return {"merge": r, "rows": env.rows(v)}


@check("pg_merge_delete", "psycopg", "MERGE ... WHEN MATCHED THEN DELETE of an archived and a current row")
def pg_merge_delete(v, env):
    t = TABLES[v]
    r = _sql(f"""MERGE INTO {t} AS p USING (VALUES ({A}), ({C}), (1000)) AS s(id) ON p.id = s.id
                 WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN DO NOTHING""")
    return {"merge": r, "rows": env.rows(v)}


@check("pg_merge_insert_dup_email_archived", "psycopg",
       "MERGE ... WHEN NOT MATCHED THEN INSERT of a row with an archived row's UNIQUE email")
def pg_merge_dup_email(v, env):
    t = TABLES[v]
    r = _sql(f"""MERGE INTO {t} AS p USING (VALUES (1000, '{email(A)}')) AS s(id, e) ON p.id = s.id
                 WHEN NOT MATCHED THEN INSERT (id, cid, email) VALUES (s.id, 1, s.e)""")
    return {"merge": r, "rows": env.rows(v)}


@check("pg_insert_on_conflict_do_nothing_archived", "psycopg",
       "INSERT ... ON CONFLICT DO NOTHING (raw SQL, no target) of an archived row's id")
def pg_insert_on_conflict_do_nothing(v, env):
    t = TABLES[v]
    r = _sql(f"INSERT INTO {t} (id, cid, email) VALUES ({A}, 1, 'x@example.com') ON CONFLICT DO NOTHING")
    return {"insert": r, "rows": env.rows(v)}


@check("pg_executemany_returning", "psycopg", "cursor.executemany(INSERT ... RETURNING id, returning=True) of 3 rows")
def pg_executemany_returning(v, env):
    def go():
        with connect() as c, c.cursor() as cur:
            cur.executemany(f"INSERT INTO {TABLES[v]} (cid, email) VALUES (%s, %s) RETURNING id",
                            [(1, f"m{i}@example.com") for i in range(3)], returning=True)
            ids = []
            while True:
                ids += [r[0] for r in cur.fetchall()]
                if not cur.nextset():
                    return ids
    return {"returning": attempt(go), "rows": env.rows(v)}


@check("pg_truncate", "psycopg", "TRUNCATE t, then an INSERT")
def pg_truncate(v, env):
    return {"truncate": _sql(f"TRUNCATE {TABLES[v]}"),
            "insert": _sql(f"INSERT INTO {TABLES[v]} (cid, email) VALUES (1, '{email(A)}')"),
            "rows": env.rows(v)}


@check("pg_update_pk_archived_to_current", "psycopg", "UPDATE t SET id = <a current id> WHERE id = <archived id>")
def pg_update_pk_archived_to_current(v, env):
    return {"update": _sql(f"UPDATE {TABLES[v]} SET id = {C} WHERE id = {A}"), "rows": env.rows(v)}


@check("pg_update_email_archived_to_current", "psycopg",
       "UPDATE t SET email = <a current row's UNIQUE email> WHERE id = <archived id>")
def pg_update_email_archived_to_current(v, env):
    return {"update": _sql(f"UPDATE {TABLES[v]} SET email = '{email(C)}' WHERE id = {A}"), "rows": env.rows(v)}


@check("pg_swap_unique_across_tiers", "psycopg",
       "one UPDATE swapping the UNIQUE emails of an archived and a current row (a plain table's "
       "non-deferrable unique index refuses it)")
def pg_swap_unique(v, env):
    r = _sql(f"""UPDATE {TABLES[v]} SET email = CASE id WHEN {A} THEN '{email(C)}' ELSE '{email(A)}' END
                 WHERE id IN ({A}, {C})""")
    return {"update": r, "rows": env.rows(v)}


@check("pg_delete_and_reinsert_archived_key", "psycopg",
       "one transaction: DELETE an archived row, INSERT a row with its id and email")
def pg_delete_reinsert(v, env):
    def go():
        with connect(autocommit=False) as c:
            d = c.execute(f"DELETE FROM {TABLES[v]} WHERE id = {A}").rowcount
            i = c.execute(f"INSERT INTO {TABLES[v]} (id, cid, email) VALUES ({A}, 1, '{email(A)}')").rowcount
            c.commit()
            return d, i
    return {"delete, insert": attempt(go), "rows": env.rows(v)}


# --- two transactions meeting on a UNIQUE key -----------------------------------
def _race(v, env, first, second, end="commit"):
    """first (a list of statements) runs in an open transaction; second runs
    from another connection and must wait for it as on a unique index; then
    the first commits or rolls back."""
    t = TABLES[v]
    c1 = connect(autocommit=False)
    c2 = connect()
    try:
        r1 = [attempt(lambda s=s: c1.execute(s.format(t=t)).rowcount) for s in first]
        p2 = c2.info.backend_pid
        th = harness.Thread(lambda: c2.execute(second.format(t=t)).rowcount)
        th.start()
        waited = wait_blocked(env.admin, p2, th)
        getattr(c1, end)()
        r2 = th.finish(env.admin)
    finally:
        c1.close()
        c2.close()
    return {"first": r1, "second": waited, "second's result": r2, "rows": env.rows(v)}


_X = "x@example.com"
for _name, _what, _first, _second, _end in [
        ("insert_vs_archived_update_commit",
         "T1 sets an archived row's email to X (uncommitted); T2 inserts a row with email X; T1 commits",
         [f"UPDATE {{t}} SET email = '{_X}' WHERE id = {A}"],
         f"INSERT INTO {{t}} (cid, email) VALUES (1, '{_X}')", "commit"),
        ("insert_vs_archived_update_rollback",
         "T1 sets an archived row's email to X (uncommitted); T2 inserts a row with email X; T1 rolls back",
         [f"UPDATE {{t}} SET email = '{_X}' WHERE id = {A}"],
         f"INSERT INTO {{t}} (cid, email) VALUES (1, '{_X}')", "rollback"),
        ("archived_update_vs_insert_commit",
         "T1 inserts a row with email X (uncommitted); T2 sets an archived row's email to X; T1 commits",
         [f"INSERT INTO {{t}} (cid, email) VALUES (1, '{_X}')"],
         f"UPDATE {{t}} SET email = '{_X}' WHERE id = {A}", "commit"),
        ("insert_vs_archived_delete_commit",
         "T1 deletes an archived row (uncommitted); T2 inserts a row with its id and email; T1 commits",
         [f"DELETE FROM {{t}} WHERE id = {A}"],
         f"INSERT INTO {{t}} (id, cid, email) VALUES ({A}, 1, '{email(A)}')", "commit"),
        ("insert_vs_archived_delete_rollback",
         "T1 deletes an archived row (uncommitted); T2 inserts a row with its id and email; T1 rolls back",
         [f"DELETE FROM {{t}} WHERE id = {A}"],
         f"INSERT INTO {{t}} (id, cid, email) VALUES ({A}, 1, '{email(A)}')", "rollback"),
        ("on_conflict_do_nothing_vs_archived_update_commit",
         "T1 sets an archived row's email to X (uncommitted); T2 INSERT (email X) ON CONFLICT (email) "
         "DO NOTHING; T1 commits",
         [f"UPDATE {{t}} SET email = '{_X}' WHERE id = {A}"],
         f"INSERT INTO {{t}} (cid, email) VALUES (1, '{_X}') ON CONFLICT (email) DO NOTHING", "commit")]:
    def _fn(v, env, _first=_first, _second=_second, _end=_end):
        return _race(v, env, _first, _second, _end)
    check(f"pg_race_{_name}", "psycopg", _what)(_fn)


@check("pg_prepared_across_register", "psycopg",
       "a connection prepares SELECT count(*) WHERE cid = $1 and UPDATE ... WHERE id = $1 (prepare=True) on "
       "the table while it is plain; the table is registered and archived; the same connection runs them again",
       register=False)
def pg_prepared_across_register(v, env):
    t = TABLES[v]
    sel = f"SELECT count(*) FROM {t} WHERE cid = %s"
    upd = f"UPDATE {t} SET n = n + 1 WHERE id = %s"
    with connect() as c:
        before = (c.execute(sel, (1,), prepare=True).fetchone()[0], c.execute(upd, (A,), prepare=True).rowcount)
        env.register(v)
        after = (attempt(lambda: c.execute(sel, (1,), prepare=True).fetchone()[0]),
                 attempt(lambda: c.execute(upd, (A,), prepare=True).rowcount),
                 attempt(lambda: c.execute(upd, (C,), prepare=True).rowcount))
    return {"before": before, "after": after, "rows": env.rows(v)}


@check("pg_null_unique_across_tiers", "psycopg",
       "an archived row's UNIQUE email set to NULL, then a row inserted with a NULL email (NULLs are distinct)")
def pg_null_unique(v, env):
    t = TABLES[v]
    return {"update": _sql(f"UPDATE {t} SET email = NULL WHERE id = {A}"),
            "insert": _sql(f"INSERT INTO {t} (cid, email) VALUES (1, NULL)"),
            "insert 2": _sql(f"INSERT INTO {t} (cid, email) VALUES (1, NULL)"),
            "rows": env.rows(v)}


@check("pg_repeatable_read_update_after_run", "psycopg",
       "REPEATABLE READ transaction reads a row due for the archive, a run moves it, the transaction updates "
       "it and commits; 40001 retried as applications do")
def pg_repeatable_read(v, env):
    t = TABLES[v]
    (due,) = env.add_due(v, 1)
    retries = 0
    result = None
    with connect(autocommit=False) as c:
        c.isolation_level = harness.psycopg.IsolationLevel.REPEATABLE_READ
        for attempt_no in range(5):
            try:
                c.execute(f"SELECT n FROM {t} WHERE id = %s", (due,)).fetchone()
                if attempt_no == 0:
                    env.run(v)
                result = c.execute(f"UPDATE {t} SET n = n + 1 WHERE id = %s", (due,)).rowcount
                c.commit()
                break
            except harness.psycopg.errors.SerializationFailure:
                c.rollback()
                retries += 1
    env.info = {"40001 retries": retries}
    return {"update": result, "rows": env.rows(v)}


@check("pg_cte_unarchive_row", "psycopg",
       "WITH d AS (DELETE an archived row RETURNING it) INSERT it again with ts = now() (same id and email)")
def pg_cte_unarchive(v, env):
    t = TABLES[v]
    r = _sql(f"""WITH d AS (DELETE FROM {t} WHERE id = {A} RETURNING id, cid, email)
                 INSERT INTO {t} (id, cid, email, ts) SELECT id, cid, email, now() FROM d""")
    return {"insert": r, "rows": env.rows(v)}


@check("pg_delete_by_ctid_batch", "psycopg",
       "the batched-delete idiom DELETE FROM t WHERE ctid IN (SELECT ctid FROM t WHERE ... LIMIT 2), after "
       "VACUUM t and 6 inserts (which reuse the line pointers the moved rows left)")
def pg_delete_by_ctid(v, env):
    t = TABLES[v]
    env.admin.execute(f"VACUUM {t}" if v != "view" else f"VACUUM {t}_current, {t}_archive")
    env.admin.execute(f"INSERT INTO {t} (cid, email) SELECT 9, 'v' || g || '@example.com' FROM generate_series(1, 6) g")
    r = _sql(f"DELETE FROM {t} WHERE ctid IN (SELECT ctid FROM {t} WHERE cid = 1 ORDER BY id LIMIT 2)")
    return {"delete": r, "rows": env.rows(v)}


@check("pg_foreign_key_added_after_register", "psycopg",
       "a new table with a foreign key to t (as a later Django migration adds one: CREATE TABLE ... "
       "REFERENCES t), rows referencing an archived and a current row, deleting a referenced row")
def pg_foreign_key(v, env):
    t = TABLES[v]
    out = {"create": _sql(f"CREATE TABLE orders_{v} (oid int PRIMARY KEY, pid bigint REFERENCES {t} (id))")}
    out["insert referencing archived"] = _sql(f"INSERT INTO orders_{v} VALUES (1, {A})")
    out["insert referencing current"] = _sql(f"INSERT INTO orders_{v} VALUES (2, {C})")
    out["delete referenced"] = _sql(f"DELETE FROM {t} WHERE id = {C}")
    env.add_due(v, 1)
    env.info = {"a run afterwards": attempt(env.run, v)}
    out["rows"] = env.rows(v)
    return out


@check("pg_lookup_plans_one_table", "psycopg",
       "SELECT ... WHERE id = %s by an archived and a current id: through psycopg's parameters (one custom plan "
       "each), prepared (prepare=True, 6 executions), and the plans of both as a prepared statement's custom and "
       "generic plan: the rows, and how many tables each plan reads (issue 41: the first tier only, as on the "
       "plain table)", view_too=True)
def pg_lookup_plans_one_table(v, env):
    t = TABLES[v]
    sql = f"SELECT id, email FROM {t} WHERE id = %s"
    out = {}
    with connect() as c:
        for k in (A, C):
            out[f"rows {k}"] = c.execute(sql, (k,)).fetchall()
            out[f"rows {k}, prepared"] = [c.execute(sql, (k,), prepare=True).fetchall() for _ in range(6)][-1]
            out[f"plan {k}, parameter"] = tables_read(c.execute("EXPLAIN (FORMAT JSON) " + sql, (k,)).fetchone()[0])
        c.execute(f"PREPARE q(bigint) AS SELECT id, email FROM {t} WHERE id = $1")
        for mode in ("force_custom_plan", "force_generic_plan"):
            c.execute(f"SET plan_cache_mode = {mode}")
            for k in (A, C):
                out[f"rows {k}, {mode}"] = c.execute(f"EXECUTE q({k})").fetchall()
                out[f"plan {k}, {mode}"] = tables_read(c.execute(f"EXPLAIN (FORMAT JSON) EXECUTE q({k})").fetchone()[0])
    return out
