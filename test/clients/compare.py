#!/usr/bin/python3
"""Real-client comparison of a plain table and a table registered with
archive_cluster in each mode (issue 16, "A real-client test in the suite").

Every check runs once per table on fresh tables of the same shape (schema
chk: pay_plain, pay_view registered with mode => 'view', pay_table registered
with mode => 'table'; 12 rows each, ids 1-6 archived by a forced run) and
records what the application observes: rows, counts, RETURNING, ids, and
errors as "ExceptionClass SQLSTATE".  A check passes when table mode observes
exactly what the plain table observes.  View mode's differences are printed
as a markdown table and written to <out>/view-mode-differences.md.

Connection from the environment: PGHOST, PGPORT, PGUSER (the server must
preload archive_cluster or not; the extension must be installed).  The test
database (CLIENTS_DB, default archive_cluster_clients) is dropped and created.

    compare.py [--out DIR] [-k SUBSTRING ...]
"""
import argparse
import json
import os
import sys
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import django                                    # noqa: E402
import psycopg                                   # noqa: E402
import sqlalchemy                                # noqa: E402
from django.conf import settings                 # noqa: E402

import harness                                   # noqa: E402
from harness import REC, VARIANTS, code, connect, message  # noqa: E402


# Where table mode differs from the plain table by design or because of what
# inheritance is, each listed in docs/user-guide.md ("Choosing a mode"): the
# check passes only if table mode's observation contains the given text (so
# a change of behaviour still fails it), and is reported as a documented
# difference.  A listed check that starts to equal the plain table passes.
DOCUMENTED = {
    "pg_delete_by_ctid_batch":
        ("a ctid is unique within one tier only (inheritance)", "\"delete\": 4"),
    "pg_foreign_key_added_after_register":
        ("a foreign key to a registered table is refused", "0A000"),
}


def configure_django():
    settings.configure(
        DATABASES={"default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": harness.DB, "USER": harness.USER, "HOST": harness.HOST, "PORT": str(harness.PORT),
            "OPTIONS": {"options": harness.OPTIONS},
        }},
        INSTALLED_APPS=["clientsapp"],
        USE_TZ=True, TIME_ZONE="UTC",
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
    )
    django.setup()


# ---------------------------------------------------------------------------
# rendering
# ---------------------------------------------------------------------------
def fmt(x):
    if isinstance(x, tuple):
        return "(" + ", ".join(fmt(i) for i in x) + ")"
    if isinstance(x, list):
        return "[" + ", ".join(fmt(i) for i in x) + "]"
    if isinstance(x, dict):
        return "{" + ", ".join(f"{fmt(k)}: {fmt(v)}" for k, v in x.items()) + "}"
    return str(x)


def is_rows(key, val):
    return key.startswith("rows") and isinstance(val, list)


def cell(obs, ref=None):
    """All observations (ref None; row lists as counts), or only those that
    differ from ref (row lists as the rows found only on this side)."""
    if obs is None:
        return ""
    parts = []
    for k, val in obs.items():
        if ref is None:
            parts.append(f"{k}: {len(val)} rows" if is_rows(k, val) else f"{k}: {fmt(val)}")
        elif k not in ref or ref[k] != val:
            other = ref.get(k)
            if is_rows(k, val) and isinstance(other, list):
                only = [r for r in val if r not in other]
                more = f" and {len(only) - 4} more" if len(only) > 4 else ""
                parts.append(f"{k}: {len(val)} rows" + (f", only here: {fmt(only[:4])}{more}" if only else ""))
            else:
                parts.append(f"{k}: {fmt(val)}")
    return "; ".join(parts)


def md(s):
    return str(s).replace("|", "\\|").replace("\n", " ")


def jsonable(x):
    if isinstance(x, (list, tuple)):
        return [jsonable(i) for i in x]
    if isinstance(x, dict):
        return {str(k): jsonable(v) for k, v in x.items()}
    if isinstance(x, (int, float, str, bool)) or x is None:
        return x
    return str(x)


# ---------------------------------------------------------------------------
def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "output"))
    ap.add_argument("-k", action="append", default=[], help="run only checks whose name contains this")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    summary_file = os.path.join(args.out, "summary.txt")
    if os.path.exists(summary_file):
        os.unlink(summary_file)

    with psycopg.connect(host=harness.HOST, port=harness.PORT, user=harness.USER, dbname="postgres",
                         autocommit=True) as c:
        c.execute(f'DROP DATABASE IF EXISTS "{harness.DB}" WITH (FORCE)')
        c.execute(f'CREATE DATABASE "{harness.DB}"')
        server = c.execute("SHOW server_version").fetchone()[0]
    admin = connect()
    admin.execute("CREATE EXTENSION archive_cluster")
    ext = admin.execute("SELECT extversion FROM pg_extension WHERE extname = 'archive_cluster'").fetchone()[0]
    preload = admin.execute("SHOW shared_preload_libraries").fetchone()[0]

    configure_django()
    import checks_django    # noqa: F401  (importing registers the checks)
    import checks_psycopg   # noqa: F401
    import checks_sqlalchemy                      # noqa: F401
    from clientsapp.models import PayPlain, PayTable, PayView
    from django.db import connections
    sa = checks_sqlalchemy.SA()
    env = harness.Env(admin, {"plain": PayPlain, "view": PayView, "table": PayTable}, sa)

    versions = (f"PostgreSQL {server}, archive_cluster {ext} (shared_preload_libraries = '{preload}'), "
                f"Python {sys.version.split()[0]}, Django {django.get_version()}, "
                f"SQLAlchemy {sqlalchemy.__version__}, psycopg {psycopg.__version__}")
    print(f"== {versions}")
    checks = [c for c in harness.CHECKS if not args.k or any(k in c.name for k in args.k)]
    results = {}
    passed = failed = documented = 0
    t0 = time.monotonic()
    for chk in checks:
        res = results[chk.name] = {}
        note = ""
        for v in VARIANTS:
            REC.current = (chk.name, v)
            env.info = None
            r = res[v] = {"obs": None, "harness": None, "info": None}
            try:
                harness.setup_tables(admin, status=chk.status, register=chk.register)
            except Exception as e:          # noqa: BLE001
                r["harness"] = f"setup: {code(e)}: {message(e)}"
                break
            try:
                r["obs"] = chk.fn(v, env)
            except Exception as e:          # noqa: BLE001
                r["obs"] = {"unexpected": code(e)}
                REC.error(e)
                r["harness"] = traceback.format_exc()
            r["info"] = env.info
            connections.close_all()
            if admin.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                             "AND pid <> pg_backend_pid() AND backend_type = 'client backend'").fetchone()[0]:
                harness.terminate_others(admin)
        plain, table = res["plain"], res.get("table", {})
        if plain.get("harness") or (table.get("harness") or "").startswith("setup"):
            ok = False
            note = "harness or setup error: " + (plain.get("harness") or table.get("harness"))
        else:
            ok = table.get("obs") is not None and table["obs"] == plain["obs"]
            if ok and chk.view_too and res.get("view", {}).get("obs") != plain["obs"]:
                ok = False
                note = f"view mode must observe what the plain table observes: {cell(res.get('view', {}).get('obs'), plain['obs'])}"
            if not ok and chk.name in DOCUMENTED and table.get("obs") is not None:
                reason, expect = DOCUMENTED[chk.name]
                if expect in json.dumps(jsonable(table["obs"])):
                    ok = True
                    documented += 1
                    note = f"documented difference: {reason}"
        res["pass"] = ok
        if ok:
            passed += 1
            print(f"ok    {chk.name}" + (f"  ({note})" if note else ""))
        else:
            failed += 1
            print(f"FAIL  {chk.name}")
            print(f"        plain: {cell(plain.get('obs'), table.get('obs') or {})}")
            print(f"        table: {cell(table.get('obs'), plain.get('obs') or {})}")
            for c_, text in REC.errors.get((chk.name, "table"), []):
                print(f"        table mode error: {c_}: {text}")
            if note:
                print("        " + note.replace("\n", "\n        "))
    elapsed = time.monotonic() - t0
    admin.close()

    write_reports(args.out, checks, results, versions, passed, failed, elapsed)
    with open(summary_file, "w") as f:
        f.write(f"{passed} {failed}\n")
    print(f"== {len(checks)} checks in {elapsed:.1f} s: table mode equals the plain table in "
          f"{passed - documented}, differs as documented in {documented}, otherwise in {failed}")
    return 0 if failed == 0 else 1


def write_reports(out, checks, results, versions, passed, failed, elapsed):
    by = {c.name: c for c in checks}
    # all checks, the three tables side by side
    lines = ["# archive_cluster real-client comparison", "",
             f"{versions}.", "",
             "Each check runs on fresh tables: 12 rows, ids 1-6 two days old and archived by a forced run, "
             "ids 7-12 current. Observations of the plain table in full (row lists as counts); "
             "the registered tables' cells list only what differs from the plain table "
             "(\"only here\": rows the plain table does not have). Errors are `ExceptionClass SQLSTATE`. "
             "In view mode the email column is not UNIQUE: register refuses a UNIQUE index other than the "
             "row identity's.", "",
             f"Table mode equals the plain table in {passed} of {passed + failed} checks.", "",
             "| check | client | what | plain table | view mode | table mode |",
             "|---|---|---|---|---|---|"]
    for name, res in results.items():
        p = res["plain"].get("obs")
        cells = []
        for v in ("view", "table"):
            o = res.get(v, {}).get("obs")
            h = res.get(v, {}).get("harness")
            cells.append(f"setup failed: {h}" if o is None and h else ("same" if o == p else cell(o, p or {})))
        lines.append(f"| {md(name)} | {by[name].client} | {md(by[name].what)} | {md(cell(p))} | "
                     f"{md(cells[0])} | {md(cells[1])} |")
    lines += ["", "## Error texts where a registered table differs from the plain table", ""]
    for name, res in results.items():
        for v in ("view", "table"):
            o = res.get(v, {}).get("obs")
            if o is not None and o != res["plain"].get("obs"):
                for c_, text in REC.errors.get((name, v), []):
                    lines.append(f"- {name}, {v} mode: `{c_}`: {md(text)}")
    info = [(name, v, res[v]["info"]) for name, res in results.items() for v in VARIANTS
            if res.get(v, {}).get("info")]
    if info:
        lines += ["", "## Not compared (depends on timing)", ""]
        lines += [f"- {name}, {v}: {fmt(i)}" for name, v, i in info]
    with open(os.path.join(out, "results.md"), "w") as f:
        f.write("\n".join(lines) + "\n")

    # view mode's differences, for the docs
    vl = ["| check | what | plain table | view mode |", "|---|---|---|---|"]
    n = 0
    for name, res in results.items():
        p, o = res["plain"].get("obs"), res.get("view", {}).get("obs")
        if o is not None and o != p:
            n += 1
            vl.append(f"| {md(name)} | {md(by[name].what)} | {md(cell(p, o))} | {md(cell(o, p or {}))} |")
    text = [f"View mode differs from the plain table in {n} of {len(results)} checks "
            f"({versions}). The view-mode table has no UNIQUE index on email: register refuses a UNIQUE "
            "index other than the row identity's in view mode.", ""] + vl
    errs = [f"- {name}: `{c_}`: {md(t)}" for name, res in results.items()
            if res.get("view", {}).get("obs") not in (None, res["plain"].get("obs"))
            for c_, t in REC.errors.get((name, "view"), [])]
    if errs:
        text += ["", "Error texts in view mode:", ""] + errs
    with open(os.path.join(out, "view-mode-differences.md"), "w") as f:
        f.write("\n".join(text) + "\n")
    print()
    print("\n".join(text))
    print()
    with open(os.path.join(out, "results.json"), "w") as f:
        json.dump({"versions": versions, "passed": passed, "failed": failed, "seconds": round(elapsed, 1),
                   "checks": {name: {"client": by[name].client, "what": by[name].what, "table_equals_plain":
                                     res["pass"], **{v: jsonable({k: res[v][k] for k in ("obs", "info")})
                                                     for v in VARIANTS if v in res}}
                              for name, res in results.items()},
                   "errors": [{"check": k[0], "variant": k[1], "code": c_, "message": t}
                              for k, lst in REC.errors.items() if k for c_, t in lst]}, f, indent=1)
    print(f"== reports: {out}/results.md, {out}/view-mode-differences.md, {out}/results.json")


if __name__ == "__main__":
    sys.exit(main())
