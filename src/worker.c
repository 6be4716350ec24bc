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
 *		compaction) is canceled after archive_cluster.job_timeout, so that
 *		no table, whatever its owner's code does, holds a worker of the pool
 *		for longer; it counts as the table's failure.
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
#include "compact.h"
#include "guc.h"
#include "index_fill.h"
#include "pool.h"
#include "replication.h"
#include "threshold.h"

PGDLLEXPORT void archive_cluster_worker_main(Datum main_arg);

/* outlives the transactions of a cycle */
static MemoryContext ac_cycle_cxt = NULL;
/* PortalContext of the worker's VACUUMs (ac_worker_vacuum) */
static MemoryContext ac_vacuum_cxt = NULL;

/*
 * Unless a worker looked at every table of this database since the server
 * started, the cumulative statistics it relies on may have been lost in a
 * crash or reset: then every table is looked at.
 */
static bool ac_stats_trusted = false;

/* When this worker leaves its database to others (worker_time_slice). */
static TimestampTz ac_slice_end = 0;

static bool
ac_slice_over(void)
{
	return GetCurrentTimestamp() >= ac_slice_end;
}

/* A job of the worker on a table, bounded by archive_cluster.job_timeout. */
typedef enum AcJobKind
{
	AC_JOB_RUN,					/* a batch of a run */
	AC_JOB_COMPACTION,
	AC_JOB_REBUILD,				/* REINDEX INDEX CONCURRENTLY of an archive's index */
	AC_JOB_DROP_LEFTOVER		/* DROP INDEX CONCURRENTLY of what a failed rebuild left */
} AcJobKind;

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
static void
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

/* The job is over, done or failed: its timeout disarmed. */
static void
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
static void
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

static void
ac_begin(const char *activity)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	SPI_connect();
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

static void
ac_commit(void)
{
	SPI_finish();
	PopActiveSnapshot();
	CommitTransactionCommand();
	pgstat_report_stat(false);
	pgstat_report_activity(STATE_IDLE, NULL);
}

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

/* In a PG_CATCH: log the error, abort the transaction, go on. */
static void
ac_log_error_and_abort(void)
{
	HOLD_INTERRUPTS();
	EmitErrorReport();
	AbortOutOfAnyTransaction();
	FlushErrorState();
	RESUME_INTERRUPTS();
}

/* Record a failed run or compaction of a table in archive_cluster_runs. */
static void
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
	ErrorData  *edata;
	bool		recorded = false;

	/* the copy outside ErrorContext, which FlushErrorState() empties */
	MemoryContextSwitchTo(ac_cycle_cxt);
	HOLD_INTERRUPTS();
	edata = CopyErrorData();
	FlushErrorState();
	AbortOutOfAnyTransaction();
	ac_job_end();
	RESUME_INTERRUPTS();
	ac_job_explain_timeout(edata, relname ? relname : psprintf("%u", relation));
	/* where a committed transaction leaves the worker */
	MemoryContextSwitchTo(TopMemoryContext);
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
 * The worker's own settings:
 * - every lock wait is bounded by archive_cluster.lock_timeout: a run takes
 *   its tables' locks with that bound itself (run.c), and any other wait (a
 *   row or key another transaction holds) ends in an error that skips the
 *   table until the next pass.  So no lock, held by whoever, stalls the
 *   archiving of the database's other tables.
 * - no parallel workers, for its queries or its VACUUM: the pool holds at
 *   most archive_cluster.max_workers of max_worker_processes, and parallel
 *   query and other extensions share the rest.
 */
static void
ac_worker_set_limits(void)
{
	char		buf[32];

	snprintf(buf, sizeof(buf), "%d", Max(archive_cluster_lock_timeout, 1));
	SetConfigOption("lock_timeout", buf, PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("max_parallel_workers_per_gather", "0", PGC_SUSET, PGC_S_OVERRIDE);
	SetConfigOption("max_parallel_maintenance_workers", "0", PGC_SUSET, PGC_S_OVERRIDE);
}

/* an index smaller than this is not worth a rebuild (1 MB) */
#define AC_REBUILD_MIN_PAGES 128

/*
 * In a PG_CATCH of a job the run history does not record (an index rebuild
 * or drop): abort, and log the error as a WARNING, with hint if it has none.
 */
static void
ac_worker_log_caught(const char *what, const char *hint)
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
	MemoryContextSwitchTo(TopMemoryContext);
	ac_job_explain_timeout(edata, what);
	if (edata->hint == NULL && hint != NULL)
		edata->hint = pstrdup(hint);
	ac_report_caught(edata, WARNING, what);
	FreeErrorData(edata);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/* Is relname what a failed REINDEX CONCURRENTLY leaves: <index>_ccnew[N] or _ccold[N]? */
static bool
ac_reindex_leftover_name(const char *relname)
{
	const char *p = strrchr(relname, '_');

	if (p == NULL || (strncmp(p, "_ccnew", 6) != 0 && strncmp(p, "_ccold", 6) != 0))
		return false;
	for (p += 6; *p != '\0'; p++)
		if (!isdigit((unsigned char) *p))
			return false;
	return true;
}

/* The qualified name of relation relid as a list of Strings, or NIL if gone. */
static List *
ac_worker_name_list(Oid relid)
{
	char	   *relname = get_rel_name(relid);
	char	   *nspname = get_namespace_name(get_rel_namespace(relid));

	if (relname == NULL || nspname == NULL)
		return NIL;
	return list_make2(makeString(nspname), makeString(relname));
}

/*
 * The indexes of an archive (just compacted and vacuumed), in the cycle's
 * memory.  *leftovers: the invalid indexes that a failed REINDEX
 * CONCURRENTLY left, by their names, when nobody works on the archive's
 * indexes now (nobody else holds its SHARE UPDATE EXCLUSIVE lock).
 * *sparse: its btree indexes (1 MB or more, not backing an exclusion
 * constraint) whose leaf pages are less full, over a fresh build's (their
 * fillfactor), than archive_cluster.index_rebuild_fill (index_fill.c); none
 * while another index of the archive is not valid (being built, or a failed
 * build's that is not recognised), which is logged.
 */
static void
ac_worker_archive_indexes(Oid archive, const char *relname, List **sparse, List **leftovers)
{
	*sparse = NIL;
	*leftovers = NIL;
	PG_TRY();
	{
		Relation	rel;

		ac_begin("archive_cluster: measuring an archive's indexes");
		rel = try_table_open(archive, AccessShareLock);
		if (rel != NULL)
		{
			List	   *indexes = RelationGetIndexList(rel);
			bool		idle = ConditionalLockRelationOid(archive, ShareUpdateExclusiveLock);
			char	   *invalid = NULL;
			ListCell   *lc;

			foreach(lc, indexes)
			{
				Oid			indexoid = lfirst_oid(lc);
				Relation	index = index_open(indexoid, AccessShareLock);
				MemoryContext old = MemoryContextSwitchTo(ac_cycle_cxt);

				if (!index->rd_index->indisvalid)
				{
					if (idle && ac_reindex_leftover_name(RelationGetRelationName(index)))
						*leftovers = lappend_oid(*leftovers, indexoid);
					else
						invalid = pstrdup(RelationGetRelationName(index));
				}
				else if (index->rd_rel->relam == BTREE_AM_OID && !index->rd_index->indisexclusion &&
						 RelationGetNumberOfBlocks(index) >= AC_REBUILD_MIN_PAGES &&
						 ac_index_leaf_fill(index, AC_FILL_SAMPLE_PAGES) /
						 (BTGetFillFactor(index) / 100.0) < archive_cluster_index_rebuild_fill)
					*sparse = lappend_oid(*sparse, indexoid);
				MemoryContextSwitchTo(old);
				index_close(index, AccessShareLock);
			}
			if (invalid != NULL && *sparse != NIL)
			{
				ereport(LOG,
						(errmsg("archive_cluster: not rebuilding the sparse indexes of the archive of \"%s\": its index \"%s\" is not valid",
								relname, invalid),
						 errhint("An index being built is waited for; drop one that a failed build left.")));
				*sparse = NIL;
			}
			table_close(rel, AccessShareLock);
		}
		ac_commit();
	}
	PG_CATCH();
	{
		ac_log_error_and_abort();
		*sparse = NIL;
		*leftovers = NIL;
	}
	PG_END_TRY();
}

/*
 * Drop index indexoid of archive that a failed REINDEX CONCURRENTLY left,
 * with DROP INDEX CONCURRENTLY, in one transaction with the check that it
 * still is one (nobody else works on the archive's indexes, it is still
 * invalid and so named).  Its waits for the archive's other lockers are
 * bounded by archive_cluster.lock_timeout, as the worker's: an index not
 * dropped in time is dropped at a later pass.  Its memory (and
 * PortalContext) in the worker's own context, as for VACUUM.
 */
static void
ac_worker_drop_leftover(Oid archive, Oid indexoid)
{
	char	   *volatile qualified = NULL;

	ac_job_begin(AC_JOB_DROP_LEFTOVER);
	PG_TRY();
	{
		HeapTuple	tup;
		List	   *name = NIL;

		SetCurrentStatementStartTimestamp();
		StartTransactionCommand();
		MemoryContextReset(ac_vacuum_cxt);
		MemoryContextSwitchTo(ac_vacuum_cxt);
		PortalContext = ac_vacuum_cxt;
		PushActiveSnapshot(GetTransactionSnapshot());
		pgstat_report_activity(STATE_RUNNING, "archive_cluster: dropping an index a failed rebuild left");
		tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
		if (HeapTupleIsValid(tup))
		{
			Form_pg_index ix = (Form_pg_index) GETSTRUCT(tup);
			char	   *relname = get_rel_name(indexoid);

			if (ix->indrelid == archive && !ix->indisvalid && relname != NULL &&
				ac_reindex_leftover_name(relname) &&
				ConditionalLockRelationOid(archive, ShareUpdateExclusiveLock))
				name = ac_worker_name_list(indexoid);
			ReleaseSysCache(tup);
		}
		if (name != NIL)
		{
			DropStmt   *drop = makeNode(DropStmt);

			qualified = MemoryContextStrdup(ac_cycle_cxt, NameListToString(name));
			drop->removeType = OBJECT_INDEX;
			drop->objects = list_make1(name);
			drop->behavior = DROP_RESTRICT;
			drop->missing_ok = true;
			drop->concurrent = true;
			RemoveRelations(drop);
		}
		if (ActiveSnapshotSet())
			PopActiveSnapshot();
		CommitTransactionCommand();
		PortalContext = NULL;
		MemoryContextSwitchTo(TopMemoryContext);
		ac_job_end();
		pgstat_report_activity(STATE_IDLE, NULL);
		if (qualified != NULL)
			ereport(LOG,
					(errmsg("archive_cluster: dropped index \"%s\" that a failed rebuild left",
							qualified)));
	}
	PG_CATCH();
	{
		PortalContext = NULL;
		ac_worker_log_caught(qualified ? qualified : "?",
							 _("A later pass of the worker drops it again; or drop the invalid index with DROP INDEX CONCURRENTLY."));
	}
	PG_END_TRY();
}

/*
 * REINDEX INDEX CONCURRENTLY of index "name" as a top-level statement: in a
 * transaction with a snapshot, its memory (and PortalContext, under which it
 * keeps what outlives its own transactions) in the worker's own context, as
 * ac_worker_vacuum() does for VACUUM.  Its waits for the archive's lockers
 * and for older snapshots are not bounded by lock_timeout (they would fail
 * it in any busy database): archive_cluster.job_timeout bounds it.
 */
static void
ac_worker_reindex(List *name)
{
	ReindexStmt *stmt;

	MemoryContextSwitchTo(ac_cycle_cxt);
	stmt = makeNode(ReindexStmt);
	stmt->kind = REINDEX_OBJECT_INDEX;
	stmt->relation = makeRangeVarFromNameList(name);
	stmt->params = list_make1(makeDefElem("concurrently", NULL, -1));

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	MemoryContextReset(ac_vacuum_cxt);
	MemoryContextSwitchTo(ac_vacuum_cxt);
	PortalContext = ac_vacuum_cxt;
	PushActiveSnapshot(GetTransactionSnapshot());
	SetConfigOption("lock_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	pgstat_report_activity(STATE_RUNNING, "archive_cluster: rebuilding an index");
	ExecReindex(make_parsestate(NULL), stmt, true);
	ac_worker_set_limits();
	if (ActiveSnapshotSet())
		PopActiveSnapshot();
	CommitTransactionCommand();
	PortalContext = NULL;
	MemoryContextSwitchTo(TopMemoryContext);
	MemoryContextReset(ac_vacuum_cxt);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * After a compaction of relation's archive and its VACUUM: drop what failed
 * rebuilds left, then rebuild the archive's btree indexes that the
 * compaction left sparse (ac_worker_archive_indexes), one at a time, with
 * REINDEX INDEX CONCURRENTLY (writes and reads go on; it builds as the
 * table's owner).  Each is a job (archive_cluster.job_timeout; without one,
 * nothing is rebuilt: its waits would have no bound); one that fails is
 * logged (not a failure of the table: its runs and compactions go on), and
 * what it left is dropped.
 */
static void
ac_worker_rebuild_indexes(Oid relation, Oid archive, const char *relname)
{
	List	   *sparse;
	List	   *leftovers;
	ListCell   *lc;

	if (archive_cluster_index_rebuild_fill <= 0 || archive_cluster_job_timeout <= 0)
		return;
	ac_pool_worker_activity(AC_ACT_REBUILDING, relation);
	ac_worker_archive_indexes(archive, relname, &sparse, &leftovers);
	foreach(lc, leftovers)
	{
		if (ac_slice_over())
			return;
		ac_worker_drop_leftover(archive, lfirst_oid(lc));
	}
	foreach(lc, sparse)
	{
		List	   *name = NIL;
		volatile bool failed = false;

		if (ac_slice_over())
			return;
		CHECK_FOR_INTERRUPTS();
		ac_job_begin(AC_JOB_REBUILD);
		PG_TRY();
		{
			ac_begin("archive_cluster: rebuilding an index");
			if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(lfirst_oid(lc))))
			{
				MemoryContext old = MemoryContextSwitchTo(ac_cycle_cxt);

				name = copyObject(ac_worker_name_list(lfirst_oid(lc)));
				MemoryContextSwitchTo(old);
			}
			ac_commit();
			if (name != NIL)
				ac_worker_reindex(name);
			ac_job_end();
		}
		PG_CATCH();
		{
			PortalContext = NULL;
			ac_worker_log_caught(relname, NULL);
			failed = true;
		}
		PG_END_TRY();
		if (failed)
		{
			List	   *unused;
			ListCell   *llc;

			ac_worker_archive_indexes(archive, relname, &unused, &leftovers);
			foreach(llc, leftovers)
				ac_worker_drop_leftover(archive, lfirst_oid(llc));
			return;
		}
		if (name != NIL)
			ereport(LOG,
					(errmsg("archive_cluster: rebuilt index \"%s\" of the archive of \"%s\"",
							NameListToString(name), relname),
					 errdetail("Its leaf pages were less than %.0f%% as full as a fresh build's (archive_cluster.index_rebuild_fill).",
							   archive_cluster_index_rebuild_fill * 100)));
	}
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
			ac_compact_table(&cfg, false, "worker", &res);
			if (res.rows > 0)
				archive = cfg.archive;
		}
		ac_commit();
		ac_job_end();
	}
	PG_CATCH();
	{
		ac_worker_caught(relation, AC_KIND_COMPACTION, started, relname);
		return;
	}
	PG_END_TRY();

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
 * Archive one table if it is due: one batch per transaction, until nothing
 * is left, archive_cluster.max_runtime has passed or the worker's time
 * slice is over, then vacuum its current table.  A table whose last runs
 * failed waits for its backoff, then is run whatever its statistics say.
 * True when it was left with rows to move; *looked false when the table
 * was not looked at (backoff, its lock not granted).
 */
static bool
ac_worker_table(Oid relation, bool *looked)
{
	TimestampTz deadline = 0;
	volatile Oid current = InvalidOid;	/* set once a batch moved rows */
	volatile bool first = true;
	bool		more = false;

	*looked = false;
	if (archive_cluster_max_runtime > 0)
		deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											   archive_cluster_max_runtime * 1000L);
	for (;;)
	{
		AcRunResult res;
		char	   *volatile relname = NULL;
		volatile bool ran = false;
		volatile bool failed = false;
		TimestampTz started = GetCurrentTimestamp();

		CHECK_FOR_INTERRUPTS();
		res.batches = 0;
		res.more = false;
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
				relname = MemoryContextStrdup(ac_cycle_cxt, name);
				ac_compute_threshold(&cfg, &th);
				if (!first || !ac_stats_trusted || backoff != 0 ||
					ac_table_due(&cfg, th.rows))
				{
					pgstat_report_activity(STATE_RUNNING, "archive_cluster: archiving");
					ac_pool_worker_activity(AC_ACT_ARCHIVING, relation);
					ac_run_table(&cfg, false, 1, "worker", &res);
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
	if (OidIsValid(current))
	{
		ac_pool_worker_activity(AC_ACT_VACUUMING, relation);
		ac_worker_vacuum(current, "archive_cluster: vacuuming a current table");
	}
	if (archive_cluster_compaction && !more && !ac_slice_over())
		ac_worker_compact(relation);
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
	List	   *relations;
	ListCell   *lc;

	ac_worker_record_ended();
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
		if (ac_worker_table(lfirst_oid(lc), &looked))
			more = true;
		if (!looked)
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
