/*-------------------------------------------------------------------------
 *
 * worker_job.c
 *		The frame of a background worker's job on a table (a batch of a run,
 *		a compaction, an index rebuild): its transaction, its settings, its
 *		time bound (archive_cluster.job_timeout, as statement_timeout bounds
 *		a statement: a background worker has no client statement, so the
 *		statement timeout is the job's), and what becomes of its errors.
 *		worker.c runs the jobs of a pass; index_rebuild.c those of an
 *		archive's indexes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "archive_cluster.h"
#include "base/guc.h"
#include "worker/pool.h"
#include "worker/worker_job.h"
#include "base/util.h"
#include "registry/config.h"

/* outlives the transactions of a cycle */
MemoryContext ac_cycle_cxt = NULL;
/* PortalContext of the worker's utility statements (VACUUM, REINDEX, DROP INDEX) */
MemoryContext ac_vacuum_cxt = NULL;

/* When this worker leaves its database to others (worker_time_slice). */
TimestampTz ac_slice_end = 0;

bool
ac_slice_over(void)
{
	return GetCurrentTimestamp() >= ac_slice_end;
}


/* when the job in progress must be over (archive_cluster.job_timeout), 0: never */
static TimestampTz ac_job_deadline = 0;
static AcJobKind ac_job_kind = AC_JOB_RUN;

/*
 * A job on a table (a batch of a run, a compaction) begins: it is canceled
 * after archive_cluster.job_timeout, whatever it waits for or runs (the
 * table owner's CHECK constraints and index expressions among others), as
 * statement_timeout cancels a statement.  A background worker has no
 * statement of a client, so the statement timeout is the job's.  The pool
 * is told when the job must be over: the launcher ends a worker that is
 * still at it well after (one whose owner code caught the cancel, say).
 */
void
ac_job_begin(AcJobKind kind)
{
	ac_job_kind = kind;
	ac_job_deadline = 0;
	if (archive_cluster_job_timeout > 0)
	{
		ac_job_deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
													  archive_cluster_job_timeout * 1000L);
		enable_timeout_at(STATEMENT_TIMEOUT, ac_job_deadline);
	}
	ac_pool_worker_job(ac_job_deadline);
}

/* When the job's timeout cancels it (0: never), for a job that stops itself before. */
TimestampTz
ac_job_deadline_at(void)
{
	return ac_job_deadline;
}

/* The job is over, done or failed: its timeout disarmed. */
void
ac_job_end(void)
{
	if (get_timeout_active(STATEMENT_TIMEOUT))
		disable_timeout(STATEMENT_TIMEOUT, false);
	/* fired as the job ended: the cancel it asked for is not for what follows */
	if (get_timeout_indicator(STATEMENT_TIMEOUT, true))
		QueryCancelPending = false;
	ac_pool_worker_job(0);
}

/*
 * An error of the job that is the cancel of its timeout: said so, in the
 * job's own words (SQLSTATE 57014 kept).
 */
void
ac_job_explain_timeout(ErrorData *edata, const char *relname)
{
	if (edata->sqlerrcode != ERRCODE_QUERY_CANCELED || ac_job_deadline == 0 ||
		GetCurrentTimestamp() < ac_job_deadline)
		return;
	switch (ac_job_kind)
	{
		case AC_JOB_RUN:
			edata->message = psprintf(_("canceling the run of table \"%s\" due to archive_cluster.job_timeout"),
									  relname);
			break;
		case AC_JOB_COMPACTION:
			edata->message = psprintf(_("canceling the compaction of table \"%s\" due to archive_cluster.job_timeout"),
									  relname);
			break;
		case AC_JOB_REBUILD:
			edata->message = psprintf(_("canceling the rebuild of an archive index of table \"%s\" due to archive_cluster.job_timeout"),
									  relname);
			break;
		case AC_JOB_DROP_LEFTOVER:
			edata->message = psprintf(_("canceling the drop of index \"%s\" due to archive_cluster.job_timeout"),
									  relname);
			break;
	}
	edata->detail = psprintf(_("The job ran longer than archive_cluster.job_timeout (%d s)."),
							 archive_cluster_job_timeout);
	edata->hint = pstrdup(_("Look for slow code of the table's owner that the job runs (CHECK constraints, index expressions), or raise archive_cluster.job_timeout."));
}

void
ac_begin(const char *activity)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

void
ac_commit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* In a PG_CATCH: log the error, abort the transaction, go on. */
void
ac_log_error_and_abort(void)
{
	HOLD_INTERRUPTS();
	EmitErrorReport();
	AbortOutOfAnyTransaction();
	FlushErrorState();
	RESUME_INTERRUPTS();
}

/*
 * The worker's own settings:
 * - every lock wait is bounded by archive_cluster.lock_timeout: a run or a
 *   compaction takes its tables' locks with that bound itself
 *   (table_job.c), and any other wait (a row or key another transaction
 *   holds) ends in an error that skips the table until the next pass.  So no lock, held by whoever, stalls the
 *   archiving of the database's other tables.
 * - no parallel workers, for its queries or its VACUUM: the pool holds at
 *   most archive_cluster.max_workers of max_worker_processes, and parallel
 *   query and other extensions share the rest.
 * - its VACUUMs (worker.c) are throttled as autovacuum's are
 *   (autovacuum_vacuum_cost_delay and autovacuum_vacuum_cost_limit, unless
 *   -1) and have the kernel write their pages back as they go
 *   (archive_cluster.run_flush_after, as runs do).  The VACUUM of an archive
 *   after a compaction dirties about as many pages as the compaction
 *   rewrote; unthrottled, as a manual VACUUM is, it left them as dirty page
 *   cache that the kernel wrote back at once half a minute later, stalling
 *   others' commits (docs/bench/history.md).
 */
void
ac_worker_set_limits(void)
{
	char		buf[32];
	const char *cost;

	snprintf(buf, sizeof(buf), "%d", Max(archive_cluster_lock_timeout, 1));
	SetConfigOption("lock_timeout", buf, PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("max_parallel_workers_per_gather", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("max_parallel_maintenance_workers", "0", PGC_SUSET, PGC_S_OVERRIDE);
	cost = GetConfigOption("autovacuum_vacuum_cost_delay", false, false);
	if (cost != NULL && strtod(cost, NULL) >= 0)
		SetConfigOption("vacuum_cost_delay", cost, PGC_SUSET, PGC_S_OVERRIDE);
	cost = GetConfigOption("autovacuum_vacuum_cost_limit", false, false);
	if (cost != NULL && strtol(cost, NULL, 10) > 0)
		SetConfigOption("vacuum_cost_limit", cost, PGC_SUSET, PGC_S_OVERRIDE);
	snprintf(buf, sizeof(buf), "%d", archive_cluster_run_flush_after);
	SetConfigOption("backend_flush_after", buf, PGC_SUSET, PGC_S_OVERRIDE);
}

/*
 * In a PG_CATCH of a job: its error copied (outside ErrorContext, which
 * FlushErrorState() empties), the transaction aborted, the job's timeout
 * disarmed and the worker's settings back; a cancel by the timeout said so
 * (ac_job_explain_timeout).  In TopMemoryContext, where a committed
 * transaction leaves the worker.
 */
ErrorData *
ac_job_abort(const char *what)
{
	ErrorData  *edata;

	MemoryContextSwitchTo(ac_cycle_cxt);
	HOLD_INTERRUPTS();
	edata = CopyErrorData();
	FlushErrorState();
	AbortOutOfAnyTransaction();
	ac_job_end();
	ac_worker_set_limits();
	RESUME_INTERRUPTS();
	ac_job_explain_timeout(edata, what);
	MemoryContextSwitchTo(TopMemoryContext);
	return edata;
}

/*
 * In a PG_CATCH of a job the run history does not record (an index rebuild
 * or drop): abort, and log the error as a WARNING, with hint if it has none.
 */
void
ac_worker_log_caught(const char *what, const char *hint)
{
	ErrorData  *edata = ac_job_abort(what);

	if (edata->hint == NULL && hint != NULL)
		edata->hint = pstrdup(hint);
	ac_report_caught(edata, WARNING, what);
	FreeErrorData(edata);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* Record a failed run, compaction or pass of a table in archive_cluster_runs. */
void
ac_worker_record_error(Oid relation, const char *kind, TimestampTz started,
					   const char *message)
{
	PG_TRY();
	{
		Oid			owner = InvalidOid;
		char	   *relname;

		ac_begin("archive_cluster: recording an error");
		relname = get_rel_name(relation);
		if (relname != NULL)
			owner = ac_relation_owner(relation);
		ac_log_run_error(relation, kind, started, "worker", owner, message);
		ac_commit();
	}
	PG_CATCH();
	{
		/* the table or the extension went away meanwhile: log only */
		ac_log_error_and_abort();
	}
	PG_END_TRY();
}
