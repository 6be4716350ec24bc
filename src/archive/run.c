/*-------------------------------------------------------------------------
 *
 * run.c
 *		archive_cluster_run() and ac_run_table(), which the worker shares:
 *		one run of a registered table, in the frame of a table job
 *		(table_job.c: run lock, bounded locks of its view and tables, still
 *		registered), moves its due rows as the table's owner (mover.c),
 *		says which rows it left behind and records the run.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/attmap.h"
#include "access/heapam.h"
#include "access/relation.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/tupconvert.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datetime.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplesort.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "archive_cluster.h"
#include "archive/mover.h"
#include "archive/run.h"
#include "archive/table_job.h"
#include "base/util.h"
#include "compat.h"
#include "registry/config.h"
#include "registry/replication.h"
#include "pace/progress.h"
#include "pace/replica_wait.h"
#include "archive/threshold.h"

PG_FUNCTION_INFO_V1(archive_cluster_run);


/* the first busy row, as a sentence */
static char *
ac_busy_text(AcMoveResult *mv)
{
	return psprintf(_("Key %s was being changed or locked by another transaction."),
					mv->busy_key ? mv->busy_key : "?");
}

/*
 * The rows a run left in <t>_current, as archive_cluster_runs.left_behind
 * shows them: the first refused row and the first busy one.  NULL: none.
 */
static char *
ac_left_behind(AcMoveResult *mv)
{
	char	   *busy = mv->busy > 0 ? ac_busy_text(mv) : NULL;

	if (mv->refused > 0 && busy)
		return psprintf("%s %s", mv->refused_detail, busy);
	return mv->refused > 0 ? mv->refused_detail : busy;
}

/*
 * Say which rows a run left in <t>_current.  Rows the archive refuses stay
 * there until someone acts: a WARNING at each run, with the SQLSTATE an
 * INSERT into the archive would raise.  Rows other transactions were
 * changing go with a later run: a LOG line.
 */
static void
ac_report_left(AcTableConfig *cfg, const char *relname, AcMoveResult *mv)
{
	char	   *curname = get_rel_name(cfg->current);
	char	   *arcname = get_rel_name(cfg->archive);

	if (mv->refused > 0)
		ereport(WARNING,
				(errcode(mv->refused_sqlstate),
				 errmsg_plural("%lld row of \"%s\" cannot be archived",
							   "%lld rows of \"%s\" cannot be archived",
							   mv->refused, (long long) mv->refused, relname),
				 errdetail_internal("%s", mv->refused_detail),
				 cfg->table_mode ?
				 errhint("Such rows stay in ONLY \"%s\", and every run tries them again. "
						 "Correct or delete them, or change the constraint of \"%s\" "
						 "(see \"Rows a run cannot archive\" in the user guide).",
						 curname ? curname : "?", arcname ? arcname : "?") :
				 errhint("Such rows stay in \"%s\", where the view shows them, and every run tries them again. "
						 "Correct or delete them, or change the constraint of \"%s\" "
						 "(see \"Rows a run cannot archive\" in the user guide).",
						 curname ? curname : "?", arcname ? arcname : "?")));
	if (mv->busy > 0)
		ereport(LOG,
				(errmsg_plural("archive run of \"%s\" left %lld row for a later run",
							   "archive run of \"%s\" left %lld rows for a later run",
							   mv->busy, relname, (long long) mv->busy),
				 errdetail_internal("%s", ac_busy_text(mv))));
}


/*
 * Run one registered table: take its run lock, then move its due batches
 * as the table's owner, and record the run.  With wait_replicas (a call),
 * a due table first waits for lagging standbys and subscribers, before it
 * takes its locks, and waits again before each batch; waited_before_us: the
 * time the worker waited for them before this batch.  Errors propagate to
 * the caller.
 */
void
ac_run_table(AcTableConfig *cfg, bool force, int max_batches, bool wait_replicas,
			 int64 waited_before_us, const char *started_by, AcRunResult *res)
{
	AcThreshold th;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	Oid			owner;
	char	   *relname;
	AcMoveResult mv;
	bool		careful;
	int64		waited0 = ac_replica_waited_in_xact();

	ac_progress_begin('a', cfg->relation, cfg->current, ac_is_background_worker());
	if (wait_replicas && (relname = get_rel_name(cfg->relation)) != NULL)
	{
		int64		waited = 0;

		ac_compute_threshold(cfg, &th);
		if ((force || ac_table_due(cfg, th.rows)) &&
			!ac_call_wait_for_replicas(relname, false, &waited))
		{
			memset(res, 0, sizeof(AcRunResult));
			res->finished = GetCurrentTimestamp();
			res->started = res->finished - waited;
			res->threshold = th.rows;
			res->more = true;
			res->lagged = true;
			res->replica_us = res->paced_us = waited;
			res->status = AC_STATUS_LAGGED;
			ac_progress_end();
			return;
		}
	}

	relname = ac_table_begin(cfg, res);
	if (relname == NULL)
	{
		ac_progress_end();
		return;
	}
	ac_refuse_if_half_published(cfg);

	ac_compute_threshold(cfg, &th);
	res->threshold = th.rows;
	/* the last run found rows the archive refuses: check rows one by one */
	careful = ac_last_run_refused(cfg->relation);
	ac_switch_to_owner(cfg->current, &save_userid, &save_sec_context, &save_nestlevel);
	owner = GetUserId();

	ac_flush_as_written();
	ac_move(cfg, th.rows, force, max_batches, careful, wait_replicas, &mv);
	ac_restore_user(save_userid, save_sec_context, save_nestlevel);
	res->finished = GetCurrentTimestamp();
	res->rows = mv.moved;
	res->batches = mv.batches;
	res->more = mv.more_left;
	res->lagged = mv.lagged;
	/* every wait of this table's call, careful retries' too, and the worker's before it */
	res->replica_us = ac_replica_waited_in_xact() - waited0 + waited_before_us;
	res->paced_us = mv.paced_us + res->replica_us;
	res->bytes = mv.bytes;
	res->status = res->batches > 0 ? "archived" :
		mv.lagged ? AC_STATUS_LAGGED : "not due";
	ac_report_left(cfg, relname, &mv);

	/* a careful run that found nothing to refuse is recorded: the next is not careful */
	if (res->batches > 0 || mv.refused > 0 || mv.careful)
	{
		AcRunLog	log;

		ac_run_log_of(&log, cfg->relation, AC_KIND_ARCHIVE, res, started_by, owner);
		log.rows_refused = mv.refused;
		log.rows_busy = mv.busy;
		log.left_behind = ac_left_behind(&mv);
		log.detail = ac_pace_detail(&mv.pace, res->replica_us, res->lagged);
		ac_log_run(&log);
	}
	ac_progress_end();
	ac_pause_point("before_commit", 3);
}


static void
ac_run_work(AcTableConfig *cfg, void *arg, AcRunResult *res)
{
	AcRunArgs  *a = (AcRunArgs *) arg;

	ac_run_table(cfg, a->force, a->max_batches, true, 0, ac_caller(), res);
}

/*
 * archive_cluster_run(relation regclass DEFAULT NULL, force boolean DEFAULT
 * false, max_batches integer DEFAULT NULL): see ac_each_table().
 */
Datum
archive_cluster_run(PG_FUNCTION_ARGS)
{
	AcRunArgs	args = {false, 0};

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("force must not be NULL")));
	args.force = PG_GETARG_BOOL(1);
	if (!PG_ARGISNULL(2))
	{
		args.max_batches = PG_GETARG_INT32(2);
		if (args.max_batches < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_batches must be at least 1"),
					 errhint("Pass NULL for no limit.")));
	}
	ac_each_table(fcinfo, AC_KIND_ARCHIVE, ac_run_work, &args);
	return (Datum) 0;
}
