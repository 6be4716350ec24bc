/*-------------------------------------------------------------------------
 *
 * worker.c
 *		A worker of the pool (pool.h), started by the launcher (launcher.c)
 *		for one database: it makes one pass over the registered tables of
 *		that database, archives the ones that are due, with nobody calling
 *		anything, and exits.
 *
 *		The test of whether a table is due uses statistics only
 *		(ac_table_due()); a due table is run like archive_cluster_run() does,
 *		as the table's owner, one batch per transaction, and then its
 *		<t>_current is vacuumed.  Then, with archive_cluster.compaction on,
 *		its archive is compacted if due (compact.c measures), in a
 *		transaction of its own, and vacuumed.  An error in one table is logged and
 *		recorded in archive_cluster_runs and the worker goes on with the
 *		others; that table waits naptime x 2^failures (at most an hour),
 *		counted from the run history.  After archive_cluster.worker_time_slice
 *		the worker stops at the next batch boundary and leaves the rest to
 *		its database's next turn.  Each job on a table (a batch, a
 *		compaction) is canceled after archive_cluster.job_timeout
 *		(worker_job.c), so that no table, whatever its owner's code does,
 *		holds a worker of the pool for longer; it counts as the table's
 *		failure.  After a compaction, the archive's indexes it left sparse
 *		are rebuilt (index_rebuild.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "access/nbtree.h"
#include "utils/syscache.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "commands/extension.h"
#include "commands/vacuum.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_node.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/bufmgr.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timeout.h"
#include "utils/timestamp.h"

#include "archive_cluster.h"
#include "archive/compact.h"
#include "pace/replica_wait.h"
#include "base/guc.h"
#include "worker/index_rebuild.h"
#include "worker/worker_job.h"
#include "worker/worker_partitioned.h"
#include "worker/pool.h"
#include "registry/replication.h"
#include "archive/threshold.h"
#include "archive/run.h"
#include "base/util.h"
#include "registry/config.h"

PGDLLEXPORT void archive_cluster_worker_main(Datum main_arg);

/*
 * Unless a worker looked at every table of this database since the server
 * started, the cumulative statistics it relies on may have been lost in a
 * crash or reset: then every table is looked at.
 */
static bool ac_stats_trusted = false;

/*
 * The registered tables of this database, or NIL with *installed = false
 * when the extension is not installed here.
 */
static List *
ac_worker_relations(bool *installed)
{
	List	   *relations = NIL;

	ac_begin("archive_cluster: listing registered tables");
	*installed = OidIsValid(get_extension_oid("archive_cluster", true));
	if (*installed)
	{
		MemoryContext oldcxt;
		List	   *found = ac_registered_relations();

		oldcxt = MemoryContextSwitchTo(ac_cycle_cxt);
		relations = list_copy(found);
		MemoryContextSwitchTo(oldcxt);
	}
	ac_commit();
	return relations;
}

/*
 * In a PG_CATCH around a run or a compaction of a table: abort the
 * transaction, then report the error (its SQLSTATE, detail and hint kept).
 * A lock not granted in time (held for long elsewhere) is logged only and
 * tried again next time; any other error is a warning, recorded in the run
 * log so that the table waits for its backoff.  True when recorded.
 */
static bool
ac_worker_caught(Oid relation, const char *kind, TimestampTz started,
				 const char *relname)
{
	ErrorData  *edata = ac_job_abort(relname ? relname : psprintf("%u", relation));
	bool		recorded = false;

	if (edata->sqlerrcode == ERRCODE_LOCK_NOT_AVAILABLE)
		ac_report_caught(edata, LOG, relname);
	else
	{
		ac_report_caught(edata, WARNING, relname);
		ac_worker_record_error(relation, kind, started, edata->message);
		recorded = true;
	}
	FreeErrorData(edata);
	return recorded;
}

/*
 * VACUUM a current table after a run moved rows out of it: until then its
 * indexes still point at every moved row, and a reader of the view visits
 * those rows' heap pages (autovacuum would come later, and a run can empty
 * most of the table at once).  Likewise an archive after a compaction, whose
 * emptied pages the next compaction then reuses.  As VACUUM does, in
 * transactions of its own;
 * an error is logged only.  The statement, and VACUUM's working memory
 * (under PortalContext), live in a context of the worker's own, as under
 * autovacuum, emptied after each VACUUM, failed or not: VACUUM commits the
 * transaction the statement was built in, and without a PortalContext a
 * failed VACUUM's memory would hang off no context and be lost.
 */
static void
ac_worker_vacuum(Oid relid, const char *activity)
{
	/* the run's deletes counted before the VACUUM that clears them */
	pgstat_report_stat(true);
	PG_TRY();
	{
		char	   *nspname;
		char	   *relname;

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		/*
		 * The statement must outlive this transaction: VACUUM commits it and
		 * reads the relation it was given in transactions of its own.
		 */
		MemoryContextSwitchTo(ac_vacuum_cxt);
		nspname = get_namespace_name(get_rel_namespace(relid));
		relname = get_rel_name(relid);
		if (nspname != NULL && relname != NULL)
		{
			VacuumStmt *stmt = makeNode(VacuumStmt);

			pgstat_report_activity(STATE_RUNNING, activity);
			stmt->is_vacuumcmd = true;
			/* a table locked elsewhere is left to autovacuum, not waited for */
			stmt->options = list_make1(makeDefElem("skip_locked", (Node *) makeBoolean(true), -1));
			stmt->rels = list_make1(makeVacuumRelation(makeRangeVar(nspname, relname, -1),
													   relid, NIL));
			PortalContext = ac_vacuum_cxt;
			ExecVacuum(make_parsestate(NULL), stmt, true);
		}
		CommitTransactionCommand();
		pgstat_report_activity(STATE_IDLE, NULL);
	}
	PG_CATCH();
	{
		ac_log_error_and_abort();
	}
	PG_END_TRY();
	PortalContext = NULL;
	MemoryContextSwitchTo(TopMemoryContext);
	MemoryContextReset(ac_vacuum_cxt);
}

/*
 * A table whose tiers a subscription writes into is left alone (see
 * replication.c); archive_cluster_tables shows its subscriptions, so the
 * skip is said at DEBUG1 only, not at every naptime in the server log.
 */
static bool
ac_worker_subscribed(AcTableConfig *cfg, const char *relname)
{
	if (!ac_subscribed_skip(cfg))
		return false;
	ereport(DEBUG1,
			(errmsg("archive_cluster: skipping \"%s\": a logical replication subscription writes into its tables",
					relname)));
	return true;
}

static void ac_worker_cap_waits(TimestampTz deadline);

/*
 * Compact a table's archive if it is due (measured by ac_compact_table()),
 * in a transaction of its own, then vacuum the archive so that the pages the
 * compaction emptied are free for the next one.  An error is logged and
 * recorded (kind "compaction"), and the table's compactions wait for their
 * backoff, counted from the history as for runs.
 */
static void
ac_worker_compact(Oid relation)
{
	volatile Oid archive = InvalidOid;
	char	   *volatile relname = NULL;
	TimestampTz started = GetCurrentTimestamp();
	AcRunResult res;

	res.rows = 0;
	ac_worker_cap_waits(0);
	ac_job_begin(AC_JOB_COMPACTION);
	PG_TRY();
	{
		AcTableConfig cfg;
		char	   *name;

		ac_begin("archive_cluster: checking an archive");
		name = get_rel_name(relation);
		if (name != NULL && ac_run_backoff_until(relation, AC_KIND_COMPACTION) <= started &&
			ac_load_config(relation, &cfg) && !ac_worker_subscribed(&cfg, name))
		{
			relname = MemoryContextStrdup(ac_cycle_cxt, name);
			ac_pool_worker_activity(AC_ACT_COMPACTING, relation);
			pgstat_report_activity(STATE_RUNNING, "archive_cluster: compacting");
			ac_compact_table(&cfg, false, false, "worker", &res);
			if (res.rows > 0)
				archive = cfg.archive;
		}
		ac_commit();
		ac_job_end();
	}
	PG_CATCH();
	{
		ac_replica_wait_cap(0);
		ac_worker_caught(relation, AC_KIND_COMPACTION, started, relname);
		return;
	}
	PG_END_TRY();
	ac_replica_wait_cap(0);

	if (OidIsValid(archive))
	{
		double		secs = (res.finished - res.started) / 1000000.0;

		ereport(LOG,
				(errmsg("archive_cluster: compacted the archive of \"%s\": %lld rows rewritten in %.3f s",
						relname, (long long) res.rows, secs)));
		ac_pool_worker_activity(AC_ACT_VACUUMING, relation);
		ac_worker_vacuum(archive, "archive_cluster: vacuuming an archive");
		ac_worker_rebuild_indexes(relation, archive, relname);
	}
}

/*
 * Whether the standbys and subscribers are within archive_cluster.
 * max_replica_lag; when they are not, the first worker to see it in a lag
 * episode says so, once (waited_us: how long it waited).
 */
static bool
ac_worker_replicas_fine(int64 waited_us)
{
	int64		lag;
	int			pid;

	if (!ac_replicas_lag_over(&lag, &pid))
	{
		(void) ac_pool_lag_episode(false);
		return true;
	}
	if (ac_pool_lag_episode(true))
		ac_report_replica_lag(LOG, NULL, false, lag, pid, waited_us);
	return false;
}

/*
 * Between a table's batches, outside a transaction: wait while a standby
 * or subscriber lags more than archive_cluster.max_replica_lag, at most
 * archive_cluster.max_replica_wait and until the time slice or the
 * table's max_runtime ("deadline", 0: none) is over, in slices of a second
 * that see a reload and archive_cluster.enabled.  False when it still lags
 * (or the wait was canceled): the pass ends.  *waited_us: the time waited.
 */
static bool
ac_worker_wait_replicas(TimestampTz deadline, int64 *waited_us)
{
	TimestampTz until;
	int64		lag;
	int			pid;
	volatile bool fine = false;

	*waited_us = 0;
	if (!ac_replicas_lag_over(&lag, &pid))
		return true;
	until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										archive_cluster_max_replica_wait * 1000L);
	until = Min(until, ac_slice_end);
	if (deadline != 0)
		until = Min(until, deadline);
	pgstat_report_activity(STATE_RUNNING, "archive_cluster: waiting for a lagging standby or subscriber");
	PG_TRY();
	{
		for (;;)
		{
			TimestampTz now = GetCurrentTimestamp();

			if (now >= until)
				break;
			if (ac_wait_for_replicas(Min(until, TimestampTzPlusMilliseconds(now, 1000)),
									 waited_us, &lag, &pid))
			{
				fine = true;
				break;
			}
			if (ConfigReloadPending)
			{
				ConfigReloadPending = false;
				ProcessConfigFile(PGC_SIGHUP);
				ac_worker_set_limits();
			}
			if (!archive_cluster_enabled)
				break;
		}
	}
	PG_CATCH();
	{
		/* a cancel (pg_cancel_backend): this pass ends, as for a job */
		ac_worker_log_caught("waiting for a lagging standby or subscriber", NULL);
		return false;
	}
	PG_END_TRY();
	pgstat_report_activity(STATE_IDLE, NULL);
	if (fine)
	{
		(void) ac_pool_lag_episode(false);
		return true;
	}
	(void) ac_worker_replicas_fine(*waited_us);
	return false;
}

/*
 * The bound of a wait for lagging peers inside a job's transaction (pace.c):
 * the time slice, the table's max_runtime (deadline, 0: none) and half the
 * job's archive_cluster.job_timeout, whichever comes first.
 */
static void
ac_worker_cap_waits(TimestampTz deadline)
{
	TimestampTz cap = ac_slice_end;

	if (deadline != 0)
		cap = Min(cap, deadline);
	if (archive_cluster_job_timeout > 0)
		cap = Min(cap, TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
												   archive_cluster_job_timeout * 500L));
	ac_replica_wait_cap(cap);
}

/*
 * Archive one table if it is due: one batch per transaction, until nothing
 * is left, archive_cluster.max_runtime has passed or the worker's time
 * slice is over, then vacuum its current table.  A table whose last runs
 * failed waits for its backoff, then is run whatever its statistics say.
 * True when it was left with rows to move; *looked false when the table
 * was not looked at (backoff, its lock not granted); *lagged true when a
 * standby or subscriber lags too far behind for the pass to go on.
 */
static bool
ac_worker_table(Oid relation, bool *looked, bool *lagged)
{
	TimestampTz deadline = 0;
	volatile Oid current = InvalidOid;	/* set once a batch moved rows */
	volatile bool first = true;
	bool		more = false;
	int64		waited = 0;		/* for lagging peers before this batch */

	*looked = false;
	*lagged = false;
	if (archive_cluster_max_runtime > 0)
		deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											   archive_cluster_max_runtime * 1000L);
	for (;;)
	{
		AcRunResult res;
		char	   *volatile relname = NULL;
		volatile bool ran = false;
		volatile bool failed = false;
		volatile bool due_lagging = false;
		TimestampTz started;

		CHECK_FOR_INTERRUPTS();
		/*
		 * A batch's WAL waits for the standbys that lag too far behind:
		 * here, between the batches' transactions, holding nothing (the
		 * first batch once the table was found due).
		 */
		if (!first && !ac_worker_wait_replicas(deadline, &waited))
		{
			*lagged = true;
			more = true;
			break;
		}
		started = GetCurrentTimestamp();
		res.batches = 0;
		res.more = false;
		ac_worker_cap_waits(deadline);
		ac_job_begin(AC_JOB_RUN);
		PG_TRY();
		{
			AcTableConfig cfg;
			AcThreshold th;
			char	   *name;
			TimestampTz backoff = 0;

			ac_begin("archive_cluster: checking a table");
			name = get_rel_name(relation);
			if (first && name != NULL)
				backoff = ac_run_backoff_until(relation, AC_KIND_ARCHIVE);
			/* a configuration row left by a drop (event triggers off): skip */
			if (name != NULL && backoff <= started && ac_load_config(relation, &cfg) &&
				!ac_worker_subscribed(&cfg, name))
			{
				bool		due = true;
				int64		lag;
				int			pid;

				relname = MemoryContextStrdup(ac_cycle_cxt, name);
				ac_compute_threshold(&cfg, &th);
				if (!first || !ac_stats_trusted || backoff != 0 ||
					ac_table_due(&cfg, th.rows))
				{
					/* due, but a peer lags: wait outside the transaction */
					if (first && ac_replicas_lag_over(&lag, &pid))
						due_lagging = true;
				}
				else
					due = false;
				if (due && !due_lagging)
				{
					pgstat_report_activity(STATE_RUNNING, "archive_cluster: archiving");
					ac_pool_worker_activity(AC_ACT_ARCHIVING, relation);
					ac_run_table(&cfg, false, 1, false, waited, "worker", &res);
					ran = true;
					if (res.rows > 0)
						current = cfg.current;
				}
			}
			ac_commit();
			ac_job_end();
			if (backoff <= started)
				*looked = true;
		}
		PG_CATCH();
		{
			/* a failure in the run log: retried after its backoff */
			if (ac_worker_caught(relation, AC_KIND_ARCHIVE, started, relname))
				*looked = true;
			failed = true;
		}
		PG_END_TRY();
		ac_replica_wait_cap(0);
		first = false;
		if (failed)
			break;				/* not inside PG_TRY: that is a loop of its own */

		if (ran && res.batches > 0)
		{
			double		secs = (res.finished - res.started) / 1000000.0;

			ereport(LOG,
					(errmsg_plural("archive_cluster: archived %lld rows of \"%s\" in %d batch, %.3f s (%.0f rows/s)",
								   "archive_cluster: archived %lld rows of \"%s\" in %d batches, %.3f s (%.0f rows/s)",
								   res.batches,
								   (long long) res.rows, relname, res.batches, secs,
								   secs > 0 ? res.rows / secs : 0)));
		}
		if (due_lagging)
			continue;			/* to the wait above */
		if (!ran || !res.more)
			break;
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			ac_worker_set_limits();
		}
		if ((deadline != 0 && GetCurrentTimestamp() >= deadline) || ac_slice_over() ||
			!archive_cluster_enabled)
		{
			more = true;
			break;
		}
	}
	/* while a peer lags, the vacuum's WAL waits for autovacuum or a later turn */
	if (OidIsValid(current) && !*lagged)
	{
		ac_pool_worker_activity(AC_ACT_VACUUMING, relation);
		ac_worker_vacuum(current, "archive_cluster: vacuuming a current table");
	}
	if (archive_cluster_compaction && !more && !ac_slice_over())
	{
		int64		lag;
		int			pid;

		/* a compaction's WAL, too, waits for peers: the next table's wait decides */
		if (!ac_replicas_lag_over(&lag, &pid))
			ac_worker_compact(relation);
	}
	ac_pool_worker_activity(AC_ACT_CHECKING, InvalidOid);
	return more;
}

/*
 * The launcher ended this database's previous worker in a job on a table
 * (its job ran past archive_cluster.job_timeout and did not end at its
 * cancel): record it as that table's failure, which the ended worker could
 * not, so that the table waits for its backoff and the next pass does not
 * get stuck in it again.
 */
static void
ac_worker_record_ended(void)
{
	Oid			relid;
	AcActivity	activity;
	TimestampTz at;

	if (!ac_pool_worker_take_ended(&relid, &activity, &at))
		return;
	ac_worker_record_error(relid, activity == AC_ACT_ARCHIVING ? AC_KIND_ARCHIVE : AC_KIND_COMPACTION,
						   at, _("terminating archive_cluster worker: its job ran past archive_cluster.job_timeout"));
}

/*
 * One pass over the registered tables of the database, then tell the pool
 * what was found: the extension missing, or work left for another turn.
 */
static void
ac_worker_pass(void)
{
	bool		installed;
	bool		more = false;
	bool		all = true;
	bool		lagged = false;
	int64		lag;
	int			pid;
	List	   *relations;
	ListCell   *lc;

	ac_worker_record_ended();
	/* a lag episode is over once a worker sees the peers within bound */
	if (!ac_replicas_lag_over(&lag, &pid))
		(void) ac_pool_lag_episode(false);
	relations = ac_worker_relations(&installed);
	if (!installed)
	{
		ac_pool_worker_done(AC_DB_ABSENT, false, false);
		return;
	}
	foreach(lc, relations)
	{
		bool		looked;

		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			ac_worker_set_limits();
		}
		if (!archive_cluster_enabled)
		{
			all = false;
			break;
		}
		/* at least one table per turn, however slow the start was */
		if (lc != list_head(relations) && ac_slice_over())
		{
			/* the others wait: the rest of the list in a later turn */
			more = true;
			all = false;
			break;
		}
		if (ac_worker_table(lfirst_oid(lc), &looked, &lagged))
			more = true;
		if (!looked)
			all = false;
		if (lagged)
		{
			/* the rest waits for a naptime: what is left is not due work now */
			more = false;
			all = false;
			break;
		}
	}
	/* then the partitioned tables' leaves, with the time left */
	if (!lagged && archive_cluster_enabled && !ac_slice_over() && ac_worker_partitioned())
	{
		more = true;
		all = false;
	}
	ac_pool_worker_done(AC_DB_INSTALLED, more, all);
}

void
archive_cluster_worker_main(Datum main_arg)
{
	uint32		generation;
	Oid			dboid;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	/* the slot first: a DROP DATABASE meanwhile holds this worker back */
	memcpy(&generation, MyBgworkerEntry->bgw_extra, sizeof(uint32));
	dboid = ac_pool_worker_attach(DatumGetInt32(main_arg), generation, &ac_stats_trusted);
	if (!OidIsValid(dboid))
		proc_exit(0);

	/* connecting waits for the database's lock too: bounded, as every wait */
	ac_worker_set_limits();
	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);
	/* again, with the database's and role's settings now read */
	ac_worker_set_limits();
	ac_slice_end = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											   archive_cluster_worker_time_slice * 1000L);
	pgstat_report_appname("archive_cluster worker");
	ac_cycle_cxt = AllocSetContextCreate(TopMemoryContext, "archive_cluster worker",
										 ALLOCSET_DEFAULT_SIZES);
	ac_vacuum_cxt = AllocSetContextCreate(TopMemoryContext, "archive_cluster vacuum",
										  ALLOCSET_DEFAULT_SIZES);

	ac_worker_pass();
	proc_exit(0);
}
