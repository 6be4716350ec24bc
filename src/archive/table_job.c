/*-------------------------------------------------------------------------
 *
 * table_job.c
 *		The frame of a job on one registered table, which runs (run.c) and
 *		compactions (compact.c) share as equals: the per-table run lock (runs
 *		and compactions of a table never overlap), the locks of its view and
 *		tables with a bounded wait, the check that it is still registered,
 *		its run history row, the SQL functions' loop over one table or all
 *		of the caller's (ac_each_table) and their result rows.  A job itself
 *		switches to the table's owner (ac_switch_to_owner) and does its work.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "access/xlog.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "postmaster/bgworker.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "archive_cluster.h"
#include "compat.h"
#include "base/guc.h"
#include "archive/table_job.h"
#include "base/subxact.h"
#include "base/util.h"
#include "pace/commit_latency.h"
#include "registry/config.h"
#include "registry/partitioned.h"
#include "registry/replication.h"

/*
 * The per-table run lock: an advisory lock tag whose fourth field no SQL
 * function produces (pg_advisory_lock() uses 1 and 2), so that no role can
 * take it or wait for it and hold runs back.  It shows in pg_locks as an
 * advisory lock with classid = the view's OID, objid = 0 and objsubid =
 * 16707 ('AC').
 */
#define AC_RUN_LOCK_CLASS 0x4143

/* Try to take the per-table run lock for this transaction. */
static bool
ac_try_run_lock(Oid relation)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, relation, 0, AC_RUN_LOCK_CLASS);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/*
 * Is this configuration still the registration of its view, with all three
 * relations in place?
 */
static bool
ac_still_registered(AcTableConfig *cfg)
{
	AcTableConfig now;

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(cfg->relation)) ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(cfg->current)) ||
		!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(cfg->archive)))
		return false;
	return ac_load_config(cfg->relation, &now) &&
		now.current == cfg->current && now.archive == cfg->archive;
}

/*
 * Take a registered table's run lock (runs and compactions of a table never
 * overlap), then the locks of its view and tables, waiting a bounded time:
 * a lock held for long (even by the table's owner) skips this table, never
 * stalls the caller's other tables.  An unregistration (or a DROP) may have
 * committed since the caller read the configuration, while this waited:
 * then look again.  False, with *status set and a NOTICE (a LOG in the
 * worker) saying why, when the table is skipped.
 */
static bool
ac_table_lock(AcTableConfig *cfg, const char *relname, const char **status)
{
	int			elevel = ac_is_background_worker() ? LOG : NOTICE;

	/*
	 * The table's own bound (archive_cluster_alter) only shortens the
	 * setting's: no owner makes runs wait longer for one table, delaying
	 * every table after it.
	 */
	bool		own = cfg->lock_timeout_ms > 0 && cfg->lock_timeout_ms < archive_cluster_lock_timeout;
	int			timeout_ms = own ? cfg->lock_timeout_ms : archive_cluster_lock_timeout;

	if (!ac_try_run_lock(cfg->relation))
	{
		*status = "skipped: another run in progress";
		ereport(elevel,
				(errmsg("skipping \"%s\": another archive run or compaction is in progress",
						relname)));
		return false;
	}

	ac_pause_point("locked", 1);

	if (!ac_lock_relation_bounded(cfg->relation, AccessShareLock, timeout_ms) ||
		!ac_lock_relation_bounded(cfg->current, RowExclusiveLock, timeout_ms) ||
		!ac_lock_relation_bounded(cfg->archive, RowExclusiveLock, timeout_ms))
	{
		*status = "skipped: lock not available";
		if (own)
			ereport(elevel,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("skipping \"%s\": could not lock its view or tables within its own lock_timeout (%d ms)",
							relname, timeout_ms),
					 errhint("Another transaction holds a conflicting lock; a later run will try again.")));
		else
			ereport(elevel,
					(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
					 errmsg("skipping \"%s\": could not lock its view or tables within archive_cluster.lock_timeout (%d ms)",
							relname, timeout_ms),
					 errhint("Another transaction holds a conflicting lock; a later run will try again.")));
		return false;
	}
	if (!ac_still_registered(cfg))
	{
		*status = "skipped: no longer registered";
		ereport(elevel,
				(errmsg("skipping \"%s\": it is no longer registered with archive_cluster",
						relname)));
		return false;
	}
	return true;
}

/*
 * The start of a run or a compaction of one table: res cleared, its start
 * time set, the table's locks taken (ac_table_lock), refused when a
 * subscription writes into a tier (ac_refuse_if_subscribed).  Returns the table's
 * name, or NULL, with res->status set, when the table is skipped.
 */
char *
ac_table_begin(AcTableConfig *cfg, AcRunResult *res)
{
	char	   *relname = get_rel_name(cfg->relation);

	memset(res, 0, sizeof(AcRunResult));
	res->started = GetCurrentTimestamp();
	res->finished = res->started;
	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", cfg->relation)));
	if (!ac_table_lock(cfg, relname, &res->status))
		return NULL;
	/* under the locks: a subscription refreshed meanwhile counts */
	ac_refuse_if_subscribed(cfg);
	return relname;
}

/*
 * A run or a compaction writes many pages through its ring of buffers; have
 * the kernel write them back as it goes (backend_flush_after, restored with
 * the user at the end of the caller's GUC nest level), as
 * checkpoint_flush_after does for checkpoints.  Left to pile up as dirty page
 * cache, they make every WAL flush of concurrent commits wait
 * (docs/benchmarks.md, target 5).
 */
void
ac_flush_as_written(void)
{
	char		flush_after[16];

	snprintf(flush_after, sizeof(flush_after), "%d", archive_cluster_run_flush_after);
	(void) set_config_option("backend_flush_after", flush_after,
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
}

/* The run log's row of a run or compaction that ended as in res. */
void
ac_run_log_of(AcRunLog *log, Oid relation, const char *kind, const AcRunResult *res,
			  const char *started_by, Oid run_as)
{
	memset(log, 0, sizeof(AcRunLog));
	log->relation = relation;
	log->kind = kind;
	log->started = res->started;
	log->finished = res->finished;
	log->rows = res->rows;
	log->bytes = res->bytes;
	log->batches = res->batches;
	log->paced_us = res->paced_us;
	log->replica_us = res->replica_us;
	log->started_by = started_by;
	log->run_as = run_as;
}

/*
 * A result row of archive_cluster_run() (table_name, status, rows_moved,
 * batches, duration) or archive_cluster_compact() (table_name, status,
 * rows_rewritten, bytes_rewritten, duration).
 */
static void
ac_put_result(ReturnSetInfo *rsinfo, const char *kind, Oid relation, AcRunResult *res)
{
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = res->finished - res->started;
	values[0] = ObjectIdGetDatum(relation);
	values[1] = CStringGetTextDatum(res->status);
	values[2] = Int64GetDatum(res->rows);
	if (strcmp(kind, AC_KIND_ARCHIVE) == 0)
		values[3] = Int32GetDatum(res->batches);
	else
		values[3] = Int64GetDatum(res->bytes);
	values[4] = IntervalPGetDatum(iv);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

AcPartitionedRun ac_partitioned_run_hook = NULL;

/*
 * How a call of archive_cluster_run() or archive_cluster_compact() was
 * started: by a pg_cron job (its background worker, or its libpq
 * connection), else by hand.
 */
const char *
ac_caller(void)
{
	if (MyBgworkerEntry != NULL && strcmp(MyBgworkerEntry->bgw_type, "pg_cron") == 0)
		return "pg_cron";
	if (application_name != NULL && strcmp(application_name, "pg_cron") == 0)
		return "pg_cron";
	return "manual";
}

/* one table's work, in a subtransaction of its own (ac_subxact_call) */
typedef struct AcTableWorkOne
{
	AcTableWork work;
	AcTableConfig *cfg;
	void	   *arg;
	AcRunResult *res;
} AcTableWorkOne;

static void
ac_table_work_one(void *arg)
{
	AcTableWorkOne *one = (AcTableWorkOne *) arg;

	one->work(one->cfg, one->arg, one->res);
}

/*
 * The body of archive_cluster_run() and archive_cluster_compact(), whose
 * first argument is a relation (NULL: all): "work" does one table, and its
 * result row is added to the SRF's result.
 *
 * With a relation: that table (errors are raised).  Without: every
 * registered table that the caller owns; an error in one table is
 * reported as a WARNING (its own SQLSTATE, message, detail and hint, and a
 * context line naming the table), recorded (of this kind), and the others
 * go on.  A query cancel or statement_timeout is not a table's error: it
 * ends the call.
 */
void
ac_each_table(FunctionCallInfo fcinfo, const char *kind, AcTableWork work, void *arg)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	AcTableConfig cfg;
	AcPartitionedConfig pcfg;
	AcRunResult res;

	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot run archive_cluster during recovery")));

	/* this transaction is a job's, even if it fails before it paces: not others' writing */
	ac_commit_latency_job();
	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	(void) ac_extension_schema();

	if (!PG_ARGISNULL(0))
	{
		Oid			relation = PG_GETARG_OID(0);

		ac_check_relation_exists(relation);
		if (strcmp(kind, AC_KIND_ARCHIVE) == 0 && ac_partitioned_run_hook != NULL &&
			!ac_load_config(relation, &cfg) && ac_load_partitioned(relation, &pcfg))
		{
			ac_check_owner(relation);
			ac_partitioned_run_hook(relation, (AcRunArgs *) arg, &res);
			ac_put_result(rsinfo, kind, relation, &res);
			SPI_finish();
			return;
		}
		if (!ac_load_config(relation, &cfg) && ac_load_partitioned(relation, &pcfg))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot compact partitioned table \"%s\"", get_rel_name(relation)),
					 errhint("archive_cluster_run() clusters its partitions in place, and passes a partition again when it needs it.")));
		ac_load_config_or_error(relation, &cfg);
		ac_check_owner(relation);
		work(&cfg, arg, &res);
		ac_put_result(rsinfo, kind, relation, &res);
	}
	else
	{
		List	   *relations = ac_registered_relations();
		ListCell   *lc;
		AcTableWorkOne one;

		foreach(lc, relations)
		{
			Oid			relation = lfirst_oid(lc);
			ErrorData  *edata;

			if (!ac_load_config(relation, &cfg) ||
				!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relation)))
				continue;		/* unregistered or dropped meanwhile */
			if (!ac_class_ownercheck(relation, GetUserId()))
				continue;
			if (ac_subscribed_skip(&cfg))
			{
				memset(&res, 0, sizeof(res));
				res.started = res.finished = GetCurrentTimestamp();
				res.status = "skipped: logical replication target";
				ereport(NOTICE,
						(errmsg("skipping \"%s\": a logical replication subscription writes into its tables",
								get_rel_name(relation)),
						 errhint("Archive on the publisher; see archive_cluster.allow_on_subscriber.")));
				ac_put_result(rsinfo, kind, relation, &res);
				continue;
			}

			one.work = work;
			one.cfg = &cfg;
			one.arg = arg;
			one.res = &res;
			edata = ac_subxact_call(ac_table_work_one, &one, NULL);
			if (edata != NULL)
			{
				ac_report_caught(edata, WARNING, get_rel_name(relation));
				res.status = psprintf("error: %s", edata->message);
				res.rows = 0;
				res.batches = 0;
				res.bytes = 0;
				res.finished = GetCurrentTimestamp();
				ac_log_run_error(relation, kind, res.started, ac_caller(), GetUserId(),
								 edata->message);
				FreeErrorData(edata);
			}
			ac_put_result(rsinfo, kind, relation, &res);
		}
		/* then the partitioned tables the caller owns */
		if (strcmp(kind, AC_KIND_ARCHIVE) == 0 && ac_partitioned_run_hook != NULL)
		{
			relations = ac_partitioned_relations();
			foreach(lc, relations)
			{
				Oid			relation = lfirst_oid(lc);

				if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relation)) ||
					!ac_class_ownercheck(relation, GetUserId()))
					continue;
				ac_partitioned_run_hook(relation, (AcRunArgs *) arg, &res);
				ac_put_result(rsinfo, kind, relation, &res);
			}
		}
	}

	SPI_finish();
}
