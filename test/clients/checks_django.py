"""Django ORM checks (imported by compare.py after django.setup())."""
import queue
import random
import threading

from django.db import IntegrityError, connection, transaction
from django.db.models import Count, F, Sum
from django.test.utils import CaptureQueriesContext

from harness import (ARCHIVED_IDS, archive_run, CURRENT_IDS, REC, TABLES, Thread, attempt, check, connect,
                     email, get, now, old, sqlstate_of, tables_read, wait_blocked)

A, C = 2, 8            # an archived row and a current row of the 12 of every check


def pid():
    connection.ensure_connection()
    return connection.connection.info.backend_pid


def close():
    connection.close()


# --- plain ORM calls --------------------------------------------------------
@check("dj_read", "Django",
       "count(), filter(cid=1) by (cid, ts), get(), exists(), Sum, values().annotate(Count), pages of "
       "order_by('-ts'), iterator(chunk_size=5) (a server-side cursor), earliest/latest, in_bulk")
def dj_read(v, env):
    M = env.models[v]
    ids = M.objects.order_by("-ts", "id").values_list("id", flat=True)
    return {"count": M.objects.count(),
            "cid1": list(M.objects.filter(cid=1).order_by("cid", "ts").values_list("id", flat=True)),
            "get": M.objects.get(pk=A).email,
            "exists": M.objects.filter(email=email(A)).exists(),
            "sum": M.objects.aggregate(s=Sum("n"))["s"],
            "per cid": [(r["cid"], r["c"]) for r in M.objects.values("cid").annotate(c=Count("id")).order_by("cid")],
            "pages": [list(ids[:5]), list(ids[5:10])],
            "iterator": [o.id for o in M.objects.order_by("id").iterator(chunk_size=5)],
            "earliest, latest": (M.objects.earliest("ts").id, M.objects.latest("ts").id),
            "in_bulk": sorted(M.objects.in_bulk([A, C]))}


def _tables_read(sql):
    """How many tables the plan of the exact text Django sent scans (with
    psycopg 3, Django binds parameters on the client: each statement is
    planned anew with its constants)."""
    with connection.cursor() as cur:
        cur.execute("EXPLAIN (FORMAT JSON) " + sql)
        return tables_read(cur.fetchone()[0])


def _sent(fn):
    """fn's result and the SQL text of the last statement Django sent for it
    (its transaction control left out)."""
    with CaptureQueriesContext(connection) as q:
        r = fn()
    sent = [c["sql"] for c in q.captured_queries
            if c["sql"].split(None, 1)[0].upper() in ("SELECT", "UPDATE", "DELETE")]
    return r, sent[-1]


@check("dj_lookup_plans_one_table", "Django",
       "get(pk=...) of an archived and of a current row, filter(pk=<current id>).update() and .delete() as "
       "Django sends them (constants bound on the client): the row, and how many tables the statement's plan "
       "reads (issue 41: a look-up by its key plans the first tier only, as on the plain table)", view_too=True)
def dj_lookup_plans_one_table(v, env):
    M = env.models[v]
    obs = {}
    for name, fn in (("get(pk=A)", lambda: M.objects.get(pk=A).email),
                     ("get(pk=C)", lambda: M.objects.get(pk=C).email),
                     ("update(pk=C)", lambda: M.objects.filter(pk=C).update(n=F("n") + 1)),
                     ("delete(pk=C+1)", lambda: M.objects.filter(pk=C + 1).delete()[0])):
        r, sql = _sent(fn)
        obs[name] = (r, "tables read", _tables_read(sql))
    obs["rows"] = env.rows(v)
    return obs


@check("dj_create", "Django", "objects.create() of a new row: the id handed back")
def dj_create(v, env):
    M = env.models[v]
    o = attempt(M.objects.create, cid=1, email="new@example.com")
    return {"create": getattr(o, "id", o), "rows": env.rows(v)}


def _create_dup(v, env, **kw):
    M = env.models[v]
    o = attempt(M.objects.create, cid=1, **kw)
    return {"create": getattr(o, "id", o), "rows": env.rows(v)}


@check("dj_create_dup_pk_archived", "Django", "create(id=<archived id>)")
def dj_create_dup_pk_archived(v, env):
    return _create_dup(v, env, id=A, email="x@example.com")


@check("dj_create_dup_pk_current", "Django", "create(id=<current id>)")
def dj_create_dup_pk_current(v, env):
    return _create_dup(v, env, id=C, email="x@example.com")


@check("dj_create_dup_email_archived", "Django", "create(email=<an archived row's UNIQUE email>)")
def dj_create_dup_email_archived(v, env):
    return _create_dup(v, env, email=email(A))


@check("dj_create_dup_email_current", "Django", "create(email=<a current row's UNIQUE email>)")
def dj_create_dup_email_current(v, env):
    return _create_dup(v, env, email=email(C))


def _save(v, env, pk, **kw):
    M = env.models[v]
    o = M.objects.get(pk=pk)
    o.n, o.status = 5, "paid"
    r = attempt(o.save, **kw)
    return {"save": r, "rows": env.rows(v)}


@check("dj_save_archived", "Django", "get() an archived row, change it, save()")
def dj_save_archived(v, env):
    return _save(v, env, A)


@check("dj_save_current", "Django", "get() a current row, change it, save()")
def dj_save_current(v, env):
    return _save(v, env, C)


@check("dj_save_update_fields_archived", "Django",
       "save(update_fields=[...]) of an archived row (Django raises when the UPDATE reports 0 rows)")
def dj_save_update_fields_archived(v, env):
    return _save(v, env, A, update_fields=["n", "status"])


@check("dj_save_after_run", "Django",
       "get() a row due for the archive, archive_cluster_run() moves it, then save() and delete()")
def dj_save_after_run(v, env):
    M = env.models[v]
    (due,) = env.add_due(v, 1)
    o = M.objects.get(pk=due)
    moved = env.run(v)
    o.n = 7
    saved = attempt(o.save)
    o2 = M.objects.get(pk=due)
    o2.status = "later"
    saved2 = attempt(o2.save, update_fields=["status"])
    row = env.rows(v, f"WHERE id = {due}")
    env.info = {"rows moved": moved}
    r = attempt(o2.delete)
    return {"save": saved, "save(update_fields)": saved2, "row": row,
            "delete": r[0] if isinstance(r, tuple) else r, "rows": env.rows(v)}


@check("dj_savepoint", "Django",
       "atomic(): create(), a nested atomic() whose create() clashes with an archived UNIQUE email "
       "(IntegrityError caught), create(), commit")
def dj_savepoint(v, env):
    M = env.models[v]
    caught = None
    with transaction.atomic():
        M.objects.create(cid=1, email="s1@example.com")
        try:
            with transaction.atomic():
                M.objects.create(cid=1, email=email(A))
        except IntegrityError as e:
            caught = REC.error(e)
        M.objects.create(cid=1, email="s2@example.com")
    return {"caught": caught, "rows": env.rows(v)}


@check("dj_update_email_to_archived", "Django",
       "filter(pk=<current>).update(email=<an archived row's UNIQUE email>)")
def dj_update_email_to_archived(v, env):
    M = env.models[v]
    r = attempt(M.objects.filter(pk=C).update, email=email(A))
    return {"update": r, "rows": env.rows(v)}


@check("dj_queryset_update_f", "Django", "filter(cid=1).update(n=F('n') + 10) over both tiers: count")
def dj_queryset_update_f(v, env):
    M = env.models[v]
    r = attempt(M.objects.filter(cid=1).update, n=F("n") + 10, status="bumped")
    return {"update": r, "rows": env.rows(v)}


@check("dj_bulk_create", "Django", "bulk_create() of 4 rows (2 old, 2 new): the ids handed back")
def dj_bulk_create(v, env):
    M = env.models[v]
    objs = [M(cid=1, email=f"b{i}@example.com", ts=(old() if i < 2 else now())) for i in range(4)]
    r = attempt(M.objects.bulk_create, objs)
    return {"bulk_create": [o.id for o in r] if isinstance(r, list) else r, "rows": env.rows(v)}


@check("dj_bulk_update", "Django", "bulk_update() of 2 archived and 2 current rows: count")
def dj_bulk_update(v, env):
    M = env.models[v]
    objs = list(M.objects.filter(pk__in=[2, 3, 8, 9]).order_by("id"))
    for o in objs:
        o.n, o.status = o.id * 10, "bulk"
    r = attempt(M.objects.bulk_update, objs, ["n", "status"])
    return {"bulk_update": r, "rows": env.rows(v)}


@check("dj_delete_archived", "Django", "get() an archived row, delete()")
def dj_delete_archived(v, env):
    M = env.models[v]
    r = attempt(M.objects.get(pk=A).delete)
    return {"delete": r[0] if isinstance(r, tuple) else r, "rows": env.rows(v)}


@check("dj_delete_current", "Django", "get() a current row, delete()")
def dj_delete_current(v, env):
    M = env.models[v]
    r = attempt(M.objects.get(pk=C).delete)
    return {"delete": r[0] if isinstance(r, tuple) else r, "rows": env.rows(v)}


@check("dj_queryset_delete", "Django", "filter(cid=1).delete() over both tiers: count")
def dj_queryset_delete(v, env):
    M = env.models[v]
    r = attempt(M.objects.filter(cid=1).delete)
    return {"delete": r[0] if isinstance(r, tuple) else r, "rows": env.rows(v)}


@check("dj_get_or_create_archived", "Django", "get_or_create(email=<archived>)")
def dj_get_or_create_archived(v, env):
    M = env.models[v]
    r = attempt(M.objects.get_or_create, email=email(A), defaults={"cid": 9})
    return {"get_or_create": (r[0].id, r[1]) if isinstance(r, tuple) else r, "rows": env.rows(v)}


@check("dj_update_or_create_archived", "Django",
       "update_or_create(email=<archived>, defaults=...) (select_for_update inside)")
def dj_update_or_create_archived(v, env):
    M = env.models[v]
    r = attempt(M.objects.update_or_create, email=email(A), defaults={"n": 42, "cid": 2})
    return {"update_or_create": (r[0].id, r[1]) if isinstance(r, tuple) else r, "rows": env.rows(v)}


# --- ON CONFLICT through bulk_create ------------------------------------------
def _bulk_conflicts(v, env, objs, **kw):
    M = env.models[v]
    r = attempt(M.objects.bulk_create, [M(**o) for o in objs], **kw)
    return {"bulk_create": len(r) if isinstance(r, list) else r, "rows": env.rows(v)}


@check("dj_bulk_create_ignore_conflicts_current", "Django",
       "bulk_create(ignore_conflicts=True): rows clashing with a current row's id and email, and a new row")
def dj_bulk_ignore_current(v, env):
    return _bulk_conflicts(v, env, [dict(cid=1, email=email(C)), dict(id=9, cid=1, email="a@example.com"),
                                    dict(cid=1, email="new@example.com")], ignore_conflicts=True)


@check("dj_bulk_create_ignore_conflicts_archived", "Django",
       "bulk_create(ignore_conflicts=True): rows clashing with an archived row's id and email, and a new row")
def dj_bulk_ignore_archived(v, env):
    return _bulk_conflicts(v, env, [dict(cid=1, email=email(A)), dict(id=3, cid=1, email="a@example.com"),
                                    dict(cid=1, email="new@example.com")], ignore_conflicts=True)


@check("dj_bulk_create_update_conflicts_current", "Django",
       "bulk_create(update_conflicts=True, unique_fields=['email']) meeting a current row")
def dj_bulk_upsert_current(v, env):
    return _bulk_conflicts(v, env, [dict(cid=1, email=email(C), n=50, status="upserted"),
                                    dict(cid=1, email="new@example.com", n=1)],
                           update_conflicts=True, unique_fields=["email"], update_fields=["n", "status"])


@check("dj_bulk_create_update_conflicts_archived", "Django",
       "bulk_create(update_conflicts=True, unique_fields=['email']) meeting an archived row")
def dj_bulk_upsert_archived(v, env):
    return _bulk_conflicts(v, env, [dict(cid=1, email=email(A), n=50, status="upserted"),
                                    dict(cid=1, email="new@example.com", n=1)],
                           update_conflicts=True, unique_fields=["email"], update_fields=["n", "status"])


# --- row locks --------------------------------------------------------------
def _probe_locks(v, ids):
    """From a second connection: which of ids are locked (FOR UPDATE NOWAIT
    fails with 55P03), and what FOR UPDATE SKIP LOCKED returns."""
    t = TABLES[v]
    out = {}
    with connect() as c:
        for i in ids:
            out[i] = attempt(lambda: c.execute(f"SELECT id FROM {t} WHERE id = %s FOR UPDATE NOWAIT",
                                               (i,)).fetchall() and "free")
        skip = attempt(lambda: [r[0] for r in c.execute(
            f"SELECT id FROM {t} WHERE id = ANY(%s) ORDER BY id FOR UPDATE SKIP LOCKED", (list(ids),))])
    return out, skip


def _sfu(v, env, pk):
    M = env.models[v]
    with transaction.atomic():
        o = attempt(lambda: M.objects.select_for_update().get(pk=pk))
        locked, skip = _probe_locks(v, [pk])
    return {"select_for_update": getattr(o, "id", o), "nowait from 2nd connection": locked[pk],
            "skip_locked from 2nd connection": skip}


@check("dj_select_for_update_archived", "Django",
       "select_for_update().get(<archived>), then FOR UPDATE NOWAIT / SKIP LOCKED from a 2nd connection")
def dj_sfu_archived(v, env):
    return _sfu(v, env, A)


@check("dj_select_for_update_current", "Django",
       "select_for_update().get(<current>), then FOR UPDATE NOWAIT / SKIP LOCKED from a 2nd connection")
def dj_sfu_current(v, env):
    return _sfu(v, env, C)


@check("dj_select_for_update_range", "Django",
       "select_for_update().filter(cid=1) over both tiers; which rows a 2nd connection finds locked")
def dj_sfu_range(v, env):
    M = env.models[v]
    with transaction.atomic():
        got = attempt(lambda: list(M.objects.select_for_update().filter(cid=1).order_by("id")
                                   .values_list("id", flat=True)))
        locked, skip = _probe_locks(v, [3, 6, 9, 12])
    return {"select_for_update": got, "nowait from 2nd connection": locked,
            "skip_locked from 2nd connection": skip}


def _sfu_rmw(v, env, pk):
    """Two read-modify-write transactions (select_for_update, n += 1, save):
    the second must wait for the first and then read its result."""
    M = env.models[v]
    pids = queue.Queue()

    def second():
        pids.put(pid())
        with transaction.atomic():
            o = M.objects.select_for_update().get(pk=pk)
            o.n += 1
            o.save(update_fields=["n"])
            return o.n
    with transaction.atomic():
        o = attempt(lambda: M.objects.select_for_update().get(pk=pk))
        if isinstance(o, str):
            return {"select_for_update": o}
        t = Thread(second, cleanup=close)
        t.start()
        waited = wait_blocked(env.admin, get(pids), t)
        o.n += 1
        o.save(update_fields=["n"])
    return {"second transaction": waited, "second's n": t.finish(env.admin),
            "final n": M.objects.get(pk=pk).n}


@check("dj_select_for_update_rmw_archived", "Django",
       "two read-modify-write transactions (select_for_update, n += 1, save) on an archived row")
def dj_sfu_rmw_archived(v, env):
    return _sfu_rmw(v, env, A)


@check("dj_select_for_update_rmw_current", "Django",
       "two read-modify-write transactions (select_for_update, n += 1, save) on a current row")
def dj_sfu_rmw_current(v, env):
    return _sfu_rmw(v, env, C)


@check("dj_skip_locked_queue", "Django",
       "job queue: 2 worker threads, each round both take the oldest job with select_for_update(skip_locked=True) "
       "while holding the other's; 12 jobs (6 archived)", status="queued")
def dj_skip_locked_queue(v, env, with_runs=False):
    M = env.models[v]

    def worker(inq, outq):
        while True:
            if inq.get() == "stop":
                return
            try:
                with transaction.atomic():
                    job = (M.objects.select_for_update(skip_locked=True).filter(status="queued")
                           .order_by("ts", "id").first())
                    outq.put(("picked", job.id if job else None))
                    inq.get()                       # "finish"
                    if job:
                        M.objects.filter(pk=job.id).update(status="done", n=F("n") + 1)
                outq.put(("committed", None))
            except Exception as e:                  # noqa: BLE001
                outq.put(("error", REC.error(e)))

    if with_runs:
        env.add_due(v, 4, status="queued")     # the oldest jobs: taken first
    qs = [(queue.Queue(), queue.Queue()) for _ in range(2)]
    threads = [Thread(worker, i, o, cleanup=close) for i, o in qs]
    runs = []
    for t in threads:
        t.start()
    rounds, errors = [], []
    for _ in range(30):
        picks = []
        for inq, outq in qs:                        # A picks and holds, then B
            inq.put("pick")
            kind, val = get(outq)
            picks.append(val if kind == "picked" else f"{kind}: {val}")
        runner = None
        if with_runs and v != "plain":              # a run while A and B hold their jobs
            with_pid = queue.Queue()

            def run():
                with connect() as c:
                    with_pid.put(c.info.backend_pid)
                    return archive_run(c, v)
            runner = Thread(run)
            runner.start()
            wait_blocked(env.admin, get(with_pid), runner)
        for (inq, outq), p in zip(qs, picks):       # A commits, then B
            if not isinstance(p, str):
                inq.put("finish")
                kind, val = get(outq)
                if kind != "committed":
                    errors.append(f"{kind}: {val}")
        if runner:
            runs.append(runner.finish(env.admin))
        rounds.append(tuple(picks))
        if all(p is None or isinstance(p, str) for p in picks):
            break
    for inq, _ in qs:
        inq.put("stop")
    for t in threads:
        t.finish(env.admin)
    handed = [p for r in rounds for p in r if isinstance(p, int)]
    if with_runs:
        env.info = {"rows moved by the run of each round": runs}
    return {"rounds (A, B)": rounds,
            "jobs handed out twice": sorted({j for j in handed if handed.count(j) > 1}),
            "commit errors": errors,
            "done": M.objects.filter(status="done").count(),
            "sum n (completions)": M.objects.aggregate(s=Sum("n"))["s"]}


@check("dj_skip_locked_queue_with_runs", "Django",
       "the job queue with 4 more jobs due for the archive, and archive_cluster_run(force) in each round "
       "while both workers hold their jobs", status="queued")
def dj_skip_locked_queue_with_runs(v, env):
    return dj_skip_locked_queue(v, env, with_runs=True)


# --- concurrent writers -----------------------------------------------------
def _f_waits(v, env, pk):
    M = env.models[v]
    pids = queue.Queue()

    def second():
        pids.put(pid())
        return M.objects.filter(pk=pk).update(n=F("n") + 1)
    with transaction.atomic():
        first = M.objects.filter(pk=pk).update(n=F("n") + 1)
        t = Thread(second, cleanup=close)
        t.start()
        waited = wait_blocked(env.admin, get(pids), t)
    return {"first": first, "second": waited, "second's count": t.finish(env.admin),
            "final n": M.objects.get(pk=pk).n}


@check("dj_f_update_waits_archived", "Django",
       "update(n=F('n') + 1) of an archived row while another transaction's increment is uncommitted")
def dj_f_waits_archived(v, env):
    return _f_waits(v, env, A)


@check("dj_f_update_waits_current", "Django",
       "update(n=F('n') + 1) of a current row while another transaction's increment is uncommitted")
def dj_f_waits_current(v, env):
    return _f_waits(v, env, C)


@check("dj_f_increments_with_runs", "Django",
       "4 threads x 3 rounds x 25 update(n=F('n') + 1) on 6-8 hot rows (archived, current, due), "
       "archive_cluster_run(force) during each round; 40001 retried")
def dj_f_increments_with_runs(v, env):
    M = env.models[v]
    threads, rounds, per_round = 4, 3, 25
    lock = threading.Lock()
    stats = {"made": 0, "retries": 0, "not found": 0, "errors": []}
    moved = []

    def worker(seed, targets, half):
        rng = random.Random(seed)
        for i in range(per_round):
            if i == per_round // 2:
                half.release()
            pk = rng.choice(targets)
            for _ in range(100):
                try:
                    cnt = M.objects.filter(pk=pk).update(n=F("n") + 1)
                except Exception as e:      # noqa: BLE001
                    if sqlstate_of(e) == "40001":
                        with lock:
                            stats["retries"] += 1
                        continue
                    with lock:
                        stats["errors"].append(REC.error(e))
                    break
                with lock:
                    stats["made" if cnt == 1 else "not found"] += 1
                break

    for r in range(rounds):
        # 2 rows due for the archive (old ts) in the current tier, hot this round
        due = [o.id for o in M.objects.bulk_create([M(cid=r + 1, ts=old()) for _ in range(2)])]
        targets = [ARCHIVED_IDS[0], ARCHIVED_IDS[1], CURRENT_IDS[0], CURRENT_IDS[1]] + due
        half = threading.Semaphore(0)
        ws = [Thread(worker, 1000 * r + k, targets, half, cleanup=close) for k in range(threads)]
        for w in ws:
            w.start()
        for _ in ws:                        # a run (moving the 2 due rows) while the increments go on
            half.acquire(timeout=30)
        with connect() as c:
            moved.append(attempt(archive_run, c, v))
        for w in ws:
            w.finish(env.admin)
    total = M.objects.aggregate(s=Sum("n"))["s"]
    env.info = {"40001 retries": stats["retries"], "rows moved by the runs": moved}
    return {"increments made": stats["made"], "expected": threads * rounds * per_round,
            "sum n": total, "not found (0 rows)": stats["not found"], "errors": sorted(set(stats["errors"]))}
