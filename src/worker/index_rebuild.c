/*-------------------------------------------------------------------------
 *
 * index_rebuild.c
 *		The background worker's rebuild of an archive's indexes that
 *		compactions left sparse (index_fill.c measures them), with REINDEX
 *		INDEX CONCURRENTLY, and the drop of what a failed rebuild left, with
 *		DROP INDEX CONCURRENTLY: each a job of the worker (worker_job.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <ctype.h>

#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "parser/parse_node.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "base/guc.h"
#include "stats/index_fill.h"
#include "worker/index_rebuild.h"
#include "worker/pool.h"
#include "worker/worker_job.h"

/* an index smaller than this is not worth a rebuild (1 MB) */
#define AC_REBUILD_MIN_PAGES 128

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
 * A utility statement that commits transactions of its own (REINDEX or DROP
 * INDEX CONCURRENTLY), run as a top-level statement: in a transaction with a
 * snapshot, its memory (and PortalContext, under which it keeps what
 * outlives its own transactions) in the worker's own context, as
 * ac_worker_vacuum() does for VACUUM.  ac_utility_finish() commits what it
 * leaves open.
 */
static void
ac_utility_start(const char *activity)
{
	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	MemoryContextReset(ac_vacuum_cxt);
	MemoryContextSwitchTo(ac_vacuum_cxt);
	PortalContext = ac_vacuum_cxt;
	PushActiveSnapshot(GetTransactionSnapshot());
	pgstat_report_activity(STATE_RUNNING, activity);
}

static void
ac_utility_finish(void)
{
	if (ActiveSnapshotSet())
		PopActiveSnapshot();
	CommitTransactionCommand();
	PortalContext = NULL;
	MemoryContextSwitchTo(TopMemoryContext);
	MemoryContextReset(ac_vacuum_cxt);
	pgstat_report_activity(STATE_IDLE, NULL);
}

/*
 * Drop index indexoid of archive that a failed REINDEX CONCURRENTLY left,
 * with DROP INDEX CONCURRENTLY, in one transaction with the check that it
 * still is one (nobody else works on the archive's indexes, it is still
 * invalid and so named).  Its waits for the archive's other lockers are
 * bounded by archive_cluster.lock_timeout, as the worker's: an index not
 * dropped in time is dropped at a later pass.
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

		ac_utility_start("archive_cluster: dropping an index a failed rebuild left");
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
		ac_utility_finish();
		ac_job_end();
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
 * REINDEX INDEX CONCURRENTLY of index "name" (ac_utility_start).  Its waits for the archive's lockers
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

	ac_utility_start("archive_cluster: rebuilding an index");
	SetConfigOption("lock_timeout", "0", PGC_SUSET, PGC_S_OVERRIDE);
	ExecReindex(make_parsestate(NULL), stmt, true);
	ac_worker_set_limits();
	ac_utility_finish();
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
void
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

