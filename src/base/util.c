/*-------------------------------------------------------------------------
 *
 * util.c
 *		Small helpers shared by archive_cluster's SQL functions: permission
 *		checks, running as a table's owner with a safe search_path, SPI
 *		shortcuts, taking a lock with a timeout and retries, and which index
 *		can identify rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "common/int.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"

#include "compat.h"
#include "base/guc.h"
#include "base/subxact.h"
#include "base/util.h"

/*
 * Error out unless the current user owns the relation (or is a member of
 * the owning role, or a superuser).
 */
void
ac_check_owner(Oid relid)
{
	if (!ac_class_ownercheck(relid, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("must be owner of table %s", get_rel_name(relid)),
				 errhint("Only the owner of a table, a member of its owning role or a superuser can do this.")));
}

/*
 * Error out if no relation has this OID (any OID is a valid regclass, and a
 * relation may be dropped while a statement holds its OID).
 */
void
ac_check_relation_exists(Oid relid)
{
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
}

/*
 * Can this index identify rows: a valid, immediate, unique btree index
 * on plain columns, without a predicate?
 */
bool
ac_is_key_index(Relation idx)
{
	Form_pg_index ix = idx->rd_index;

	return ix->indisunique && ix->indimmediate && ix->indisvalid &&
		ix->indislive && idx->rd_rel->relam == BTREE_AM_OID &&
		heap_attisnull(idx->rd_indextuple, Anum_pg_index_indpred, NULL) &&
		heap_attisnull(idx->rd_indextuple, Anum_pg_index_indexprs, NULL);
}

/*
 * Find the row identity of rel: its primary key, or else its first unique,
 * immediate, non-partial btree index on plain NOT NULL columns.  Fills
 * keys[] (attribute numbers) and eqops[] (equality operators) and returns
 * the number of key columns, or 0 when there is none.
 */
int
ac_identity_key(Relation rel, AttrNumber *keys, Oid *eqops)
{
	List	   *indexes = RelationGetIndexList(rel);
	Oid			pk = rel->rd_pkindex;
	List	   *candidates = NIL;
	ListCell   *lc;
	int			result = 0;

	if (OidIsValid(pk))
		candidates = lappend_oid(candidates, pk);
	foreach(lc, indexes)
		if (lfirst_oid(lc) != pk)
			candidates = lappend_oid(candidates, lfirst_oid(lc));

	foreach(lc, candidates)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index ix = idx->rd_index;
		bool		ok;
		int			i;

		ok = ac_is_key_index(idx) && ix->indnkeyatts <= INDEX_MAX_KEYS;

		for (i = 0; ok && i < ix->indnkeyatts; i++)
		{
			AttrNumber	attnum = ix->indkey.values[i];

			if (attnum <= 0 ||
				!TupleDescAttr(RelationGetDescr(rel), attnum - 1)->attnotnull)
				ok = false;
			else
			{
				keys[i] = attnum;
				eqops[i] = get_opfamily_member(idx->rd_opfamily[i],
											   idx->rd_opcintype[i],
											   idx->rd_opcintype[i],
											   BTEqualStrategyNumber);
				if (!OidIsValid(eqops[i]))
					ok = false;
			}
		}
		if (ok)
			result = ix->indnkeyatts;
		index_close(idx, AccessShareLock);
		if (result > 0)
			break;
	}
	return result;
}

/* The owner of a relation. */
Oid
ac_relation_owner(Oid relid)
{
	HeapTuple	tup;
	Oid			owner;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
	return owner;
}

/*
 * Run what follows as the owner of relid, in a security-restricted
 * operation, with search_path = pg_catalog, pg_temp and GUC changes kept
 * local to this call; the pattern of amcheck and CLUSTER.  Undo with
 * ac_restore_user().
 */
void
ac_switch_to_owner(Oid relid, Oid *save_userid, int *save_sec_context,
				   int *save_nestlevel)
{
	Oid			owner = ac_relation_owner(relid);

	GetUserIdAndSecContext(save_userid, save_sec_context);
	SetUserIdAndSecContext(owner,
						   *save_sec_context | SECURITY_RESTRICTED_OPERATION);
	*save_nestlevel = NewGUCNestLevel();
	(void) set_config_option("search_path", "pg_catalog, pg_temp",
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/*
 * Inside ac_switch_to_owner(): row-level security off, so that a query a
 * policy would filter (FORCE ROW LEVEL SECURITY) fails instead of seeing
 * part of a table.  Restored with the search_path by ac_restore_user().
 */
void
ac_no_row_security(void)
{
	(void) set_config_option("row_security", "off",
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

void
ac_restore_user(Oid save_userid, int save_sec_context, int save_nestlevel)
{
	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);
}

/* schema.name, both quoted as needed, palloc'd */
char *
ac_qualified_name(Oid relid)
{
	char	   *relname = get_rel_name(relid);
	char	   *nspname;

	if (relname == NULL)
		elog(ERROR, "cache lookup failed for relation %u", relid);
	nspname = get_namespace_name(get_rel_namespace(relid));
	return quote_qualified_identifier(nspname, relname);
}

/* Run one statement through SPI; error out unless it did what was expected. */
void
ac_spi_exec(const char *sql, int expected)
{
	int			rc = SPI_execute(sql, false, 0);

	if (rc != expected)
		elog(ERROR, "SPI_execute returned %s for \"%s\"",
			 SPI_result_code_string(rc), sql);
}

/*
 * An interval as microseconds, months as 30 days and days as 24 hours (as
 * lock_timeout takes them); false when that overflows.
 */
bool
ac_interval_us(Interval *iv, int64 *us)
{
	int64		days;

	return !(pg_mul_s64_overflow((int64) iv->month, DAYS_PER_MONTH, &days) ||
			 pg_add_s64_overflow(days, (int64) iv->day, &days) ||
			 pg_mul_s64_overflow(days, USECS_PER_DAY, us) ||
			 pg_add_s64_overflow(*us, iv->time, us));
}

/* An interval argument in whole milliseconds, > 0 and < 1 day. */
int
ac_interval_ms(Interval *iv, const char *argname)
{
	int64		us;

	if (!ac_interval_us(iv, &us) || us < 1000 || us >= USECS_PER_DAY)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s must be between 1 millisecond and 1 day", argname)));
	return (int) (us / 1000);
}

/*
 * Take an ACCESS EXCLUSIVE lock on relid, waiting at most timeout_ms each
 * time, and trying again up to "retries" times with a growing pause in
 * between.  The lock belongs to the caller's transaction.
 */
void
ac_lock_with_retries(Oid relid, int timeout_ms, int retries)
{
	int			attempt;

	for (attempt = 0; !ac_lock_relation_bounded(relid, AccessExclusiveLock, timeout_ms); attempt++)
	{
		if (attempt >= retries)
			ereport(ERROR,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("could not lock table \"%s\"", get_rel_name(relid)),
					 errdetail_plural("An ACCESS EXCLUSIVE lock was not granted within %d ms in %d attempt.",
									  "An ACCESS EXCLUSIVE lock was not granted within %d ms in %d attempts.",
									  retries + 1, timeout_ms, retries + 1),
					 errhint("Try again when the table is less busy, or raise lock_timeout or lock_retries.")));
		ereport(NOTICE,
				(errmsg("could not lock table \"%s\" within %d ms, retrying (%d of %d)",
						get_rel_name(relid), timeout_ms, attempt + 1, retries)));
		/* back off: 50 ms, 100 ms, ... at most 1 s */
		pg_usleep(Min(1000L, 50L * (attempt + 1)) * 1000L);
		CHECK_FOR_INTERRUPTS();
	}

	/* the relation may have gone away while we waited */
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
}

/* a lock taken with lock_timeout (ac_lock_relation_bounded) */
typedef struct AcBoundedLock
{
	Oid			relid;
	LOCKMODE	mode;
	const char *timeout;
} AcBoundedLock;

static void
ac_lock_with_timeout(void *arg)
{
	AcBoundedLock *bl = (AcBoundedLock *) arg;
	int			nestlevel = NewGUCNestLevel();

	(void) set_config_option("lock_timeout", bl->timeout, PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	LockRelationOid(bl->relid, bl->mode);
	AtEOXact_GUC(true, nestlevel);
}

/*
 * Take a lock on a relation, waiting at most timeout_ms for it (0: not at
 * all), without an error: false when it was not granted in time.  The wait
 * is an ordinary lock wait (in the lock's queue, seen in pg_locks), bounded
 * by lock_timeout in a subtransaction, where its timeout error is caught.
 * Background work (runs, the worker) uses this so that a lock another role
 * holds for long, even on its own table, only makes that table wait for a
 * later run instead of stalling every other table behind it.
 */
bool
ac_lock_relation_bounded(Oid relid, LOCKMODE mode, int timeout_ms)
{
	char		buf[32];
	AcBoundedLock bl;
	ErrorData  *edata;

	if (ConditionalLockRelationOid(relid, mode))
		return true;
	if (timeout_ms <= 0)
		return false;
	snprintf(buf, sizeof(buf), "%d", timeout_ms);
	bl.relid = relid;
	bl.mode = mode;
	bl.timeout = buf;
	/* the subtransaction's lock goes to the caller when it commits */
	edata = ac_subxact_call(ac_lock_with_timeout, &bl, NULL);
	if (edata == NULL)
		return true;
	if (edata->sqlerrcode != ERRCODE_LOCK_NOT_AVAILABLE)
		ReThrowError(edata);
	FreeErrorData(edata);
	return false;
}

/* error context callback of ac_report_caught */
static void
ac_run_error_context(void *arg)
{
	errcontext("archive run of table \"%s\"", (const char *) arg);
}

/*
 * Report an error caught during the run of table relname again, at elevel
 * (WARNING or LOG), as it was raised: its SQLSTATE, message, detail, hint
 * and context, plus a context line naming the table.  Never nests the
 * message inside one of ours.  Needs no transaction.
 */
void
ac_report_caught(ErrorData *edata, int elevel, const char *relname)
{
	ErrorContextCallback callback;

	Assert(elevel < ERROR);
	callback.callback = ac_run_error_context;
	callback.arg = unconstify(char *, relname ? relname : "?");
	callback.previous = error_context_stack;
	error_context_stack = &callback;
	edata->elevel = elevel;
	ThrowErrorData(edata);
	error_context_stack = callback.previous;
}

/* the first key of the test hook's advisory locks (1094930497) */
#define AC_PAUSE_LOCK_KEY 0x41435041

/*
 * Test hook: with archive_cluster.debug_pause naming this phase, wait until
 * no session holds the advisory lock (AC_PAUSE_LOCK_KEY, phase), as taken by
 * pg_advisory_lock(1094930497, phase).  The wait is not bounded by
 * lock_timeout (the worker's is archive_cluster.lock_timeout): a test holds
 * the lock as long as it needs.
 */
void
ac_pause_point(const char *name, int phase)
{
	LOCKTAG		tag;
	int			save_lock_timeout = LockTimeout;

	if (archive_cluster_debug_pause == NULL || archive_cluster_debug_pause[0] == '\0' ||
		strstr(archive_cluster_debug_pause, name) == NULL)
		return;
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, AC_PAUSE_LOCK_KEY, phase, 2);
	LockTimeout = 0;
	PG_TRY();
	{
		(void) LockAcquire(&tag, ShareLock, false, false);
	}
	PG_FINALLY();
	{
		LockTimeout = save_lock_timeout;
	}
	PG_END_TRY();
	LockRelease(&tag, ShareLock, false);
}

/* Error out if argument argno (named name) of a SQL function is NULL. */
void
ac_require_arg(FunctionCallInfo fcinfo, int argno, const char *name)
{
	if (PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s must not be NULL", name)));
}
