/*-------------------------------------------------------------------------
 *
 * tier_guard.c
 *		Table mode: the index access method archive_cluster_guard, which
 *		tells when a row enters a tier, so that its keys are checked against
 *		the other tier (tier_unique.c).
 *
 *		Each tier carries one guard index, on the columns of its row
 *		identity (the primary key) and the age column: it stores nothing and is never scanned,
 *		but the executor calls its insert function for every row it writes
 *		to the tier's indexes: each INSERT, COPY FROM and MERGE row, and
 *		each UPDATE that is not HOT.  An UPDATE that changes a key is never
 *		HOT (the key is in a unique index); one that changes no indexed
 *		column is, and costs nothing.  No trigger is involved: statements
 *		pay no trigger set-up, and COPY keeps its multi-row inserts.  Given
 *		the key, the guard skips a row whose keys are all beyond the
 *		archive's (the usual new row) without reading it again.
 *
 *		A row's keys must be looked up in the other tier after its entries
 *		in its own tier's unique indexes are in place: of two transactions
 *		writing one key into the two tiers at once, the second to look then
 *		sees the first one's entry.  The executor inserts a row's entries
 *		index by index, in the order of their OIDs.  When the guard comes
 *		after every unique index of its tier (created after them, as
 *		registration does), the row is checked at once, as a unique index
 *		checks each row before the statement writes the next one.  Else
 *		(a unique index created later) the guard only notes the row (its
 *		TID) and the row is checked once the executor is done with it:
 *		when the next row reaches a guard at the same query level, at the
 *		end of the statement (ExecutorRun, ExecutorFinish for
 *		data-modifying CTEs, a utility statement such as COPY FROM), or at
 *		the latest before the transaction commits.  It is checked as the
 *		role that wrote it (a SECURITY DEFINER function's owner, say), and
 *		the version this transaction wrote is read, or the HOT successor it
 *		has updated it to (same keys), never one it deleted or replaced.
 *		Query levels keep a row noted by an outer statement from being
 *		checked by a statement that user code (an index expression, say)
 *		runs while the outer row's entries are still being made.  Rows noted
 *		in a subtransaction that rolls back are forgotten.
 *
 *		As with triggers, nothing is checked while session_replication_role
 *		is replica: a logical replication subscriber applies rows that were
 *		checked on the publisher.  The mover and unarchive.c leave the guard
 *		out of the indexes they write (ac_guard_leave_out): they move rows
 *		whose keys are unique already.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/execnodes.h"
#include "optimizer/cost.h"
#include "storage/bufmgr.h"
#include "tcop/utility.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "compat.h"
#include "table/guard_indexes.h"
#include "table/key_range.h"
#include "table/tier_guard.h"
#include "table/tier_unique_cache.h"
#include "table/tier_unique.h"

PG_FUNCTION_INFO_V1(archive_cluster_guard_handler);

/* a noted row keeps the guard's columns if they are this many at most */
#define AC_GUARD_KEEP_COLS 4

/* A row that reached a guard, to be checked. */
typedef struct AcGuardRow
{
	Oid			relid;			/* the tier */
	Oid			filenumber;		/* its storage then (TRUNCATE changes it) */
	ItemPointerData tid;		/* the row version written */
	int			level;			/* query level that wrote it */
	SubTransactionId subid;		/* subtransaction that wrote it */
	Oid			userid;			/* who wrote it, as the executor then ran */
	int			sec_context;
	bool		upsert;			/* by INSERT ... ON CONFLICT */
	/* the guard's columns of the row, if kept (by-value, at most 4) */
	int			ncols;			/* 0: not kept */
	AttrNumber	cols[AC_GUARD_KEEP_COLS];
	Datum		values[AC_GUARD_KEEP_COLS];
	bool		isnull[AC_GUARD_KEEP_COLS];
} AcGuardRow;

static AcGuardRow *ac_rows = NULL;	/* in TopMemoryContext */
static int	ac_nrows = 0;
static int	ac_maxrows = 0;
static int	ac_level = 0;		/* statements running, nested */
static int	ac_checking = 0;	/* checks running, nested */
static MemoryContext ac_check_cxt = NULL;

static ExecutorRun_hook_type prev_executor_run = NULL;
static ExecutorFinish_hook_type prev_executor_finish = NULL;
static ProcessUtility_hook_type prev_process_utility = NULL;



/* Keep row, to be checked. */
static void
ac_guard_note_row(const AcGuardRow *row)
{
	if (ac_nrows == ac_maxrows)
	{
		int			n = Max(ac_maxrows * 2, 8);

		if (ac_rows == NULL)
			ac_rows = MemoryContextAlloc(TopMemoryContext, sizeof(AcGuardRow) * n);
		else
			ac_rows = repalloc(ac_rows, sizeof(AcGuardRow) * n);
		ac_maxrows = n;
	}
	ac_rows[ac_nrows++] = *row;
}

/*
 * May the row version at tuple be checked?  One this transaction wrote, and
 * has not deleted or updated since, except by a HOT update, whose newer
 * version keeps every indexed column (and so every key) and never reaches
 * the guard itself.  A version replaced otherwise has a successor that did.
 */
static bool
ac_guard_row_current(HeapTupleHeader tuple)
{
	if (!TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetRawXmin(tuple)))
		return false;			/* not ours: the line was reused */
	if ((tuple->t_infomask & HEAP_XMAX_INVALID) ||
		HEAP_XMAX_IS_LOCKED_ONLY(tuple->t_infomask))
		return true;
	if (!TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetUpdateXid(tuple)))
		return true;			/* a deleter that rolled back */
	return HeapTupleHeaderIsHotUpdated(tuple);
}

/*
 * Check one row now (tier_unique.c), as the role that wrote it, in memory of
 * its own.  The version is copied: no pin is held while the look-ups wait.
 * heap: the tier, if the caller has it open (the row just written), else
 * NULL.
 */
static void
ac_guard_check(const AcGuardRow *row, Relation heap)
{
	bool		nested = ac_checking > 0;
	MemoryContext cxt;
	MemoryContext old;
	Oid			save_userid;
	int			save_sec_context;

	if (nested)
		cxt = AllocSetContextCreate(CurrentMemoryContext, "archive_cluster nested guard check",
									ALLOCSET_SMALL_SIZES);
	else
	{
		if (ac_check_cxt == NULL)
			ac_check_cxt = AllocSetContextCreate(TopMemoryContext, "archive_cluster guard check",
												 ALLOCSET_SMALL_SIZES);
		cxt = ac_check_cxt;
	}
	old = MemoryContextSwitchTo(cxt);
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(row->userid, row->sec_context);
	ac_checking++;
	PG_TRY();
	{
		Relation	rel = NULL;

		/* a complete row whose keys need no look-up: not even opened */
		if (row->ncols == 0 ||
			!ac_unique_row_beyond(row->relid, row->cols, row->ncols, row->values, row->isnull))
			rel = heap ? heap : try_table_open(row->relid, AccessShareLock);
		if (rel != NULL && ac_rel_number(rel) == row->filenumber)
		{
			HeapTupleData tuple;
			HeapTuple	copy = NULL;
			Buffer		buffer;

			tuple.t_self = row->tid;
			if (heap_fetch(rel, SnapshotAny, &tuple, &buffer, false))
			{
				if (ac_guard_row_current(tuple.t_data))
					copy = heap_copytuple(&tuple);
				ReleaseBuffer(buffer);
			}
			if (copy != NULL)
				ac_unique_check_tuple(rel, copy, row->upsert);
		}
		if (rel != NULL && heap == NULL)
			table_close(rel, AccessShareLock);
	}
	PG_FINALLY();
	{
		ac_checking--;
		SetUserIdAndSecContext(save_userid, save_sec_context);
	}
	PG_END_TRY();
	MemoryContextSwitchTo(old);
	if (nested)
		MemoryContextDelete(cxt);
	else
		MemoryContextReset(cxt);
}

/*
 * Check the rows noted at query level "level" or deeper, oldest first: the
 * executor is done with them.  A check may note more rows (user code
 * writing to a tier); they are complete when it returns, and checked too.
 */
static void
ac_guard_flush(int level)
{
	while (ac_nrows > 0 && ac_rows[ac_nrows - 1].level >= level)
	{
		int			first = ac_nrows - 1;
		AcGuardRow	row;

		while (first > 0 && ac_rows[first - 1].level >= level)
			first--;
		row = ac_rows[first];
		memmove(&ac_rows[first], &ac_rows[first + 1],
				sizeof(AcGuardRow) * (ac_nrows - first - 1));
		ac_nrows--;
		PG_TRY();
		{
			ac_guard_check(&row, NULL);
		}
		PG_CATCH();
		{
			/* still to be checked, unless its subtransaction rolls back */
			ac_guard_note_row(&row);
			PG_RE_THROW();
		}
		PG_END_TRY();
	}
}

/* ---- the access method ---- */

/*
 * Keep the guard's columns of a row to be noted in row, when there are few
 * and passed by value: once the row is complete, they may show that its
 * keys need no look-up (ac_unique_row_beyond), and it is not read again.
 */
static void
ac_guard_keep_columns(Relation index, Datum *values, bool *isnull, AcGuardRow *row)
{
	int			ncols = index->rd_index->indnatts;
	int			i;

	if (ncols > AC_GUARD_KEEP_COLS)
		return;
	for (i = 0; i < ncols; i++)
		if (!TupleDescAttr(RelationGetDescr(index), i)->attbyval)
			return;
	for (i = 0; i < ncols; i++)
	{
		row->cols[i] = index->rd_index->indkey.values[i];
		row->values[i] = values[i];
		row->isnull[i] = isnull[i];
	}
	row->ncols = ncols;
}

/*
 * Is the row version at tid of heap being inserted speculatively, by
 * INSERT ... ON CONFLICT (the executor completes it after its index
 * entries)?
 */
static bool
ac_guard_speculative(Relation heap, ItemPointer tid)
{
	Buffer		buffer = ReadBuffer(heap, ItemPointerGetBlockNumber(tid));
	Page		page;
	ItemId		lp;
	bool		speculative = false;

	LockBuffer(buffer, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buffer);
	lp = PageGetItemId(page, ItemPointerGetOffsetNumber(tid));
	if (ItemIdIsNormal(lp))
		speculative = HeapTupleHeaderIsSpeculative((HeapTupleHeader) PageGetItem(page, lp));
	UnlockReleaseBuffer(buffer);
	return speculative;
}

static bool
ac_guard_insert(Relation index, Datum *values, bool *isnull, ItemPointer heap_tid,
				Relation heap, IndexUniqueCheck checkUnique, bool indexUnchanged,
				IndexInfo *indexInfo)
{
	AcGuardAction action;
	AcGuardRow	row;
	bool		upsert;

	/*
	 * Not under the replica role; nor for the rows that CREATE INDEX
	 * CONCURRENTLY of a guard adds, which were checked when written.
	 */
	if (indexInfo->ii_Concurrent)
		return false;
	if (SessionReplicationRole == SESSION_REPLICATION_ROLE_REPLICA)
	{
		/*
		 * Not checked, but told: a row entering the archive so (a logical
		 * replication subscriber's) moves the keys a statement planned
		 * without the archive relies on (plan/probe_table.c), as the checked
		 * writes do (tier_unique.c).  Its entries in the unique indexes made
		 * before this guard are in.  (Not for a row of <t> known as such.)
		 */
		AcUniqueEntry *e = ac_unique_entry_find(RelationGetRelid(heap));

		if (e == NULL || !e->valid || e->parent != RelationGetRelid(heap))
			ac_key_range_bump(RelationGetRelid(heap));
		return false;
	}
	/* the rows before this one at this level are complete */
	ac_guard_flush(ac_level);

	/* a row of INSERT ... ON CONFLICT, let through by its trigger: taken */
	upsert = ac_unique_upsert_pending(heap) && ac_guard_speculative(heap, heap_tid);
	if (upsert)
		ac_unique_upsert_taken();

	/*
	 * Its entries in every unique index of the tier made already (the guard
	 * came after them): checked now, before the statement changes the next
	 * row, as a unique index checks each row, unless its keys are beyond
	 * the archive's.  Else once complete.
	 */
	action = ac_unique_guard_action(heap, index, values, isnull);
	if (action == AC_GUARD_SKIP)
		return false;
	row.relid = RelationGetRelid(heap);
	row.filenumber = ac_rel_number(heap);
	row.tid = *heap_tid;
	row.level = ac_level;
	row.subid = GetCurrentSubTransactionId();
	GetUserIdAndSecContext(&row.userid, &row.sec_context);
	row.upsert = upsert;
	row.ncols = 0;
	if (action == AC_GUARD_NOTE)
		ac_guard_keep_columns(index, values, isnull, &row);
	if (action == AC_GUARD_CHECK)
		ac_guard_check(&row, heap);
	else
		ac_guard_note_row(&row);
	return false;
}

/*
 * Nothing to build: the index stores nothing.  It must see every row of a
 * heap table, and be given columns of the row: no expression, no
 * predicate.
 */
static IndexBuildResult *
ac_guard_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	bool		plain = indexInfo->ii_Predicate == NIL;
	int			i;

	if (heap->rd_rel->relam != HEAP_TABLE_AM_OID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("access method \"%s\" supports heap tables only", AC_GUARD_AM)));
	for (i = 0; i < indexInfo->ii_NumIndexAttrs; i++)
		if (indexInfo->ii_IndexAttrNumbers[i] == 0)
			plain = false;
	if (!plain)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("access method \"%s\" does not support expressions or WHERE clauses",
						AC_GUARD_AM)));
	return palloc0(sizeof(IndexBuildResult));
}

static void
ac_guard_buildempty(Relation index)
{
}

static IndexBulkDeleteResult *
ac_guard_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
					IndexBulkDeleteCallback callback, void *callback_state)
{
	return stats;
}

static IndexBulkDeleteResult *
ac_guard_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	return stats;
}

/* Never chosen: it has no operators and cannot scan. */
static void
ac_guard_costestimate(struct PlannerInfo *root, struct IndexPath *path, double loop_count,
					  Cost *indexStartupCost, Cost *indexTotalCost,
					  Selectivity *indexSelectivity, double *indexCorrelation,
					  double *indexPages)
{
	*indexStartupCost = disable_cost;
	*indexTotalCost = disable_cost;
	*indexSelectivity = 1.0;
	*indexCorrelation = 0.0;
	*indexPages = 0.0;
}

static bytea *
ac_guard_options(Datum reloptions, bool validate)
{
	if (validate && DatumGetPointer(reloptions) != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("access method \"%s\" takes no storage parameters", AC_GUARD_AM)));
	return NULL;
}

static bool
ac_guard_validate(Oid opclassoid)
{
	return true;
}

static IndexScanDesc
ac_guard_beginscan(Relation index, int nkeys, int norderbys)
{
	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("index \"%s\" cannot be scanned", RelationGetRelationName(index)),
			 errdetail("Indexes of access method \"%s\" store nothing.", AC_GUARD_AM)));
	return NULL;				/* keep the compiler quiet */
}

static void
ac_guard_rescan(IndexScanDesc scan, ScanKey keys, int nkeys, ScanKey orderbys, int norderbys)
{
}

static void
ac_guard_endscan(IndexScanDesc scan)
{
}

Datum
archive_cluster_guard_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *am = makeNode(IndexAmRoutine);

	/* no strategies, no support functions, no scans; the rest false */
	am->amcanmulticol = true;
	am->amkeytype = InvalidOid;
	am->ambuild = ac_guard_build;
	am->ambuildempty = ac_guard_buildempty;
	am->aminsert = ac_guard_insert;
	am->ambulkdelete = ac_guard_bulkdelete;
	am->amvacuumcleanup = ac_guard_vacuumcleanup;
	am->amcostestimate = ac_guard_costestimate;
	am->amoptions = ac_guard_options;
	am->amvalidate = ac_guard_validate;
	am->ambeginscan = ac_guard_beginscan;
	am->amrescan = ac_guard_rescan;
	am->amendscan = ac_guard_endscan;
	PG_RETURN_POINTER(am);
}

/* ---- where rows are checked: statement ends, commit ---- */

static void
ac_guard_executor_run(AC_EXECUTOR_RUN_PARAMS)
{
	ac_level++;
	PG_TRY();
	{
		if (prev_executor_run)
			prev_executor_run(AC_EXECUTOR_RUN_ARGS);
		else
			standard_ExecutorRun(AC_EXECUTOR_RUN_ARGS);
		ac_guard_flush(ac_level);
	}
	PG_FINALLY();
	{
		ac_level--;
	}
	PG_END_TRY();
}

/* Data-modifying CTEs that the query did not read to the end finish here. */
static void
ac_guard_executor_finish(QueryDesc *queryDesc)
{
	ac_level++;
	PG_TRY();
	{
		if (prev_executor_finish)
			prev_executor_finish(queryDesc);
		else
			standard_ExecutorFinish(queryDesc);
		ac_guard_flush(ac_level);
	}
	PG_FINALLY();
	{
		ac_level--;
	}
	PG_END_TRY();
}

/*
 * DROP INDEX CONCURRENTLY of a guard would make it stop taking rows in a
 * transaction of its own before the drop itself could be refused.
 */
static void
ac_guard_refuse_concurrent_drop(Node *stmt)
{
	DropStmt   *drop = (DropStmt *) stmt;
	Oid			am;
	ListCell   *lc;

	if (!IsA(stmt, DropStmt) || drop->removeType != OBJECT_INDEX || !drop->concurrent ||
		!OidIsValid(am = ac_guard_am()))
		return;
	foreach(lc, drop->objects)
	{
		RangeVar   *rv = makeRangeVarFromNameList((List *) lfirst(lc));
		Oid			indexid = RangeVarGetRelid(rv, NoLock, true);

		if (OidIsValid(indexid) && get_rel_relkind(indexid) == RELKIND_INDEX &&
			ac_is_guard(indexid, am))
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("DROP INDEX CONCURRENTLY does not support indexes of access method \"%s\"",
							AC_GUARD_AM),
					 errhint("Use DROP INDEX.")));
	}
}

static void
ac_guard_process_utility(PlannedStmt *pstmt, const char *queryString,
						 bool readOnlyTree, ProcessUtilityContext context,
						 ParamListInfo params, QueryEnvironment *queryEnv,
						 DestReceiver *dest, QueryCompletion *qc)
{
	ac_guard_refuse_concurrent_drop(pstmt->utilityStmt);
	ac_level++;
	PG_TRY();
	{
		if (prev_process_utility)
			prev_process_utility(pstmt, queryString, readOnlyTree, context,
								 params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
									params, queryEnv, dest, qc);
		ac_guard_flush(ac_level);
	}
	PG_FINALLY();
	{
		ac_level--;
	}
	PG_END_TRY();
}

static void
ac_guard_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			ac_guard_flush(0);
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
			ac_nrows = 0;
			ac_unique_upsert_taken();	/* none pending past its transaction */
			break;
		default:
			break;
	}
}

/* Rows of a subtransaction: forgotten if it rolls back, its parent's if not. */
static void
ac_guard_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						  SubTransactionId parentSubid, void *arg)
{
	int			i;
	int			n = 0;

	if (event != SUBXACT_EVENT_ABORT_SUB && event != SUBXACT_EVENT_COMMIT_SUB)
		return;
	for (i = 0; i < ac_nrows; i++)
	{
		if (ac_rows[i].subid == mySubid)
		{
			if (event == SUBXACT_EVENT_ABORT_SUB)
				continue;
			ac_rows[i].subid = parentSubid;
		}
		ac_rows[n++] = ac_rows[i];
	}
	ac_nrows = n;
}

void
ac_guard_install(void)
{
	prev_executor_run = ExecutorRun_hook;
	ExecutorRun_hook = ac_guard_executor_run;
	prev_executor_finish = ExecutorFinish_hook;
	ExecutorFinish_hook = ac_guard_executor_finish;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = ac_guard_process_utility;
	RegisterXactCallback(ac_guard_xact_callback, NULL);
	RegisterSubXactCallback(ac_guard_subxact_callback, NULL);
}
