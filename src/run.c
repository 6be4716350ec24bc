/*-------------------------------------------------------------------------
 *
 * run.c
 *		archive_cluster_run(): move the immutable tail of <t>_current (rows
 *		older than the hot window) into <t>_archive, sorted by the cluster
 *		key, and the batch threshold that decides when a table is due.
 *
 *		The mover works on the table access method directly:
 *		1. scan <t>_current and collect the TIDs of eligible rows, one batch
 *		   at a time (the threshold: distinct keys x rows per page);
 *		2. delete each of them without waiting; a row that is being changed
 *		   or was changed since the scan's snapshot is left for a later run,
 *		   and only rows actually deleted go on;
 *		3. sort those rows by the cluster key (tuplesort);
 *		4. append them to <t>_archive with multi-inserts, then insert their
 *		   index entries, sorted per index (ac_index_sorts_*).
 *		All of it happens in the caller's transaction, so it commits or
 *		rolls back as a whole: a row is in exactly one of the two tables.
 *		Locks: ROW EXCLUSIVE on both tables, plus a transaction-level
 *		advisory lock per registered table so that runs never overlap.
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
#include "utils/typcache.h"

#include "archive_cluster.h"
#include "compat.h"
#include "tiers.h"

PG_FUNCTION_INFO_V1(archive_cluster_run);
PG_FUNCTION_INFO_V1(archive_cluster_table_state);

/*
 * The per-table run lock: an advisory lock tag whose fourth field no SQL
 * function produces (pg_advisory_lock() uses 1 and 2), so that no role can
 * take it or wait for it and hold runs back.  It shows in pg_locks as an
 * advisory lock with classid = the view's OID, objid = 0 and objsubid =
 * 16707 ('AC').
 */
#define AC_RUN_LOCK_CLASS 0x4143

/* rows handed to table_multi_insert() at a time */
#define AC_MULTI_INSERT 1000

/* Statistics of one column: distinct values and average width. */
static bool
ac_column_stats(Oid relid, AttrNumber attnum, double reltuples,
				double *ndistinct, int32 *width)
{
	HeapTuple	tup;
	Form_pg_statistic st;

	tup = SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(relid),
						  Int16GetDatum(attnum), BoolGetDatum(false));
	if (!HeapTupleIsValid(tup))
		return false;
	st = (Form_pg_statistic) GETSTRUCT(tup);
	if (ndistinct)
		*ndistinct = st->stadistinct >= 0 ? st->stadistinct :
			-st->stadistinct * Max(reltuples, 0);
	if (width)
		*width = st->stawidth;
	ReleaseSysCache(tup);
	return true;
}

static double
ac_reltuples(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	double		result;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	result = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
	ReleaseSysCache(tup);
	return result;
}

/*
 * Rows of average width that fit on a heap page, from the statistics of
 * every column of relid; < 0 when a column has no statistics.
 */
static double
ac_rows_per_page(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	int			natts;
	Size		width = 0;
	Size		rowbytes;
	int			i;

	/* from the catalogs alone: no lock, so a locked table never waits here */
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	natts = ((Form_pg_class) GETSTRUCT(tup))->relnatts;
	ReleaseSysCache(tup);
	for (i = 1; i <= natts; i++)
	{
		int32		w;
		bool		dropped;

		tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(i));
		if (!HeapTupleIsValid(tup))
			continue;
		dropped = ((Form_pg_attribute) GETSTRUCT(tup))->attisdropped;
		ReleaseSysCache(tup);
		if (dropped)
			continue;
		if (!ac_column_stats(relid, i, 0, NULL, &w))
			return -1;
		width += w;
	}

	rowbytes = MAXALIGN(SizeofHeapTupleHeader + width) + sizeof(ItemIdData);
	return floor((double) (BLCKSZ - SizeOfPageHeaderData) / rowbytes);
}

/*
 * The batch size: batch_rows when set, else distinct values of the leading
 * cluster column x rows per page (the seed's rule: one page per key and
 * batch), from the statistics of the current and archive tables.
 */
void
ac_compute_threshold(AcTableConfig *cfg, AcThreshold *th)
{
	double		nd = -1;
	int			t;

	th->distinct_keys = -1;
	th->rows_per_page = -1;
	for (t = 0; t < 2; t++)
	{
		Oid			relid = t == 0 ? cfg->current : cfg->archive;
		AttrNumber	attnum = get_attnum(relid, cfg->cluster_by[0]);
		double		d;
		double		rpp;

		if (attnum > 0 &&
			ac_column_stats(relid, attnum, ac_reltuples(relid), &d, NULL) &&
			d > th->distinct_keys)
			th->distinct_keys = d;
		if (th->rows_per_page < 0 && (rpp = ac_rows_per_page(relid)) > 0)
			th->rows_per_page = rpp;
	}
	nd = th->distinct_keys;

	if (cfg->batch_rows > 0)
	{
		th->rows = cfg->batch_rows;
		th->source = "batch_rows";
	}
	else if (nd > 0 && th->rows_per_page > 0)
	{
		th->rows = (int64) Min(ceil(nd * th->rows_per_page), (double) AC_MAX_BATCH_ROWS);
		th->source = "statistics";
	}
	else
	{
		th->rows = AC_DEFAULT_THRESHOLD;
		th->source = "default";
	}
}

/* now() - hot_window */
TimestampTz
ac_cutoff(AcTableConfig *cfg)
{
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
												   TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
												   IntervalPGetDatum(&cfg->hot_window)));
}

/* the cutoff as a value of the age column's type */
static int64
ac_cutoff_for_type(AcTableConfig *cfg, Oid agetype)
{
	TimestampTz cutoff = ac_cutoff(cfg);

	if (getBaseType(agetype) == TIMESTAMPOID)
		return DatumGetTimestamp(DirectFunctionCall1(timestamptz_timestamp,
													 TimestampTzGetDatum(cutoff)));
	return cutoff;
}

/*
 * Fraction of the rows of <t>_current older than the cutoff, from the
 * histogram of the age column; -1 when there are no statistics.
 */
static double
ac_eligible_fraction(AcTableConfig *cfg)
{
	AttrNumber	attnum = get_attnum(cfg->current, cfg->age_column);
	HeapTuple	tup;
	AttStatsSlot sslot;
	int64		cutoff;
	double		frac;
	Oid			agetype;
	int			i;
	int			below = 0;

	/* an estimate by name, from the statistics only: a timestamp column's */
	if (attnum <= 0)
		return -1;
	agetype = getBaseType(get_atttype(cfg->current, attnum));
	if (agetype != TIMESTAMPOID && agetype != TIMESTAMPTZOID)
		return -1;
	tup = SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(cfg->current),
						  Int16GetDatum(attnum), BoolGetDatum(false));
	if (!HeapTupleIsValid(tup))
		return -1;
	if (!get_attstatsslot(&sslot, tup, STATISTIC_KIND_HISTOGRAM, InvalidOid,
						  ATTSTATSSLOT_VALUES) || sslot.nvalues < 2)
	{
		ReleaseSysCache(tup);
		return -1;
	}
	cutoff = ac_cutoff_for_type(cfg, agetype);
	for (i = 0; i < sslot.nvalues; i++)
		if (DatumGetInt64(sslot.values[i]) < cutoff)
			below++;
	frac = below == 0 ? 0 : (double) (below - 1) / (sslot.nvalues - 1);
	if (below == sslot.nvalues)
		frac = 1;
	free_attstatsslot(&sslot);
	ReleaseSysCache(tup);
	return frac;
}

/*
 * Live rows of a table: from the cumulative statistics, which follow every
 * committed insert and delete, else from pg_class; -1 when unknown.
 */
static double
ac_live_rows(Oid relid)
{
	PgStat_StatTabEntry *tabentry = pgstat_fetch_stat_tabentry(relid);

	if (tabentry != NULL)
		return (double) ac_stat_live_tuples(tabentry);
	return ac_reltuples(relid);
}

/*
 * Estimated rows of <t>_current older than the cutoff; -1 when there are
 * no statistics.
 */
static int64
ac_eligible_estimate(AcTableConfig *cfg)
{
	double		live = ac_live_rows(cfg->current);
	double		frac = ac_eligible_fraction(cfg);

	if (live < 0 || frac < 0)
		return -1;
	return (int64) (frac * live);
}

/*
 * The background worker's cheap test of whether a table may be due: from
 * statistics and estimates only, never a scan.  Without a histogram of the
 * age column, every live row counts as eligible; the run itself then counts
 * exactly and moves nothing unless the threshold is reached.
 */
bool
ac_table_due(AcTableConfig *cfg, int64 threshold)
{
	double		live = ac_live_rows(cfg->current);
	double		frac = ac_eligible_fraction(cfg);

	if (live < 0)
		return true;			/* never analyzed nor counted: look */
	return live * (frac < 0 ? 1.0 : frac) >= threshold;
}

/* The view column (0-based) of a configured column name; error if gone. */
static int
ac_view_column(Relation view, const char *name)
{
	int			col = ac_view_column_named(view, name);

	if (col < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of view \"%s\" does not exist",
						name, RelationGetRelationName(view)),
				 errhint("The cluster_by and age_column of a registered table must stay columns of its view; rename the column back.")));
	return col;
}

/* Try to take the per-table run lock for this transaction. */
static bool
ac_try_run_lock(Oid relation)
{
	LOCKTAG		tag;

	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, relation, 0, AC_RUN_LOCK_CLASS);
	return LockAcquire(&tag, ExclusiveLock, false, true) != LOCKACQUIRE_NOT_AVAIL;
}

/* State of one run of the mover over one table. */
typedef struct AcMover
{
	Relation	cur;
	Relation	arc;
	EState	   *estate;
	ResultRelInfo *rri;
	AttrMap    *map;			/* columns of archive from current; NULL: same */
	BulkInsertState bistate;
	TupleTableSlot *fetchslot;
	TupleTableSlot *sortslot;
	TupleTableSlot *slots[AC_MULTI_INSERT];
	int			nslots;
	int			nkeys;
	AttrNumber	sortcols[AC_MAX_CLUSTER_COLS];
	Oid			sortops[AC_MAX_CLUSTER_COLS];
	Oid			sortcolls[AC_MAX_CLUSTER_COLS];
	bool		nullsfirst[AC_MAX_CLUSTER_COLS];
	CommandId	cid;
	bool		sorted_indexes; /* index entries sorted per index, see below */
	Tuplesortstate **isorts;	/* one per index of the archive */
	ExprState **predicates;		/* of partial indexes */
	/* pacing by archive_cluster.run_max_wal_rate, see ac_throttle() */
	int			throttle_calls;
	FullTransactionId next_xid; /* at the previous check */
	bool		had_xid;		/* the run's own transaction ID was assigned */
	TimestampTz others_seen;	/* when others last began writing */
	bool		pacing;
	TimestampTz pace_start;
	uint64		pace_wal;		/* pgWalUsage.wal_bytes at pace_start */
	int64		paced_us;		/* time slept */
} AcMover;

/* how long after the last sign of other writers a run still paces itself */
#define AC_OTHERS_RECENT_US		1000000

/*
 * Pace the run while other transactions are writing: a commit has to flush
 * the WAL written before its commit record, the run's too, so a run writing
 * hundreds of megabytes in a few seconds makes every concurrent commit wait
 * (docs/benchmarks.md, target 5).  While other transactions began writing
 * (took a transaction ID) within the last second, the run sleeps as needed
 * to keep its own WAL under archive_cluster.run_max_wal_rate; alone, it goes
 * at full speed.  Called for every row and index entry; looks every 256.
 */
static void
ac_throttle(AcMover *m)
{
	FullTransactionId next;
	TimestampTz now;
	uint64		assigned;
	double		ahead_ms;

	if (archive_cluster_run_max_wal_rate <= 0 || ++m->throttle_calls % 256 != 0)
		return;
	next = ReadNextFullTransactionId();
	now = GetCurrentTimestamp();
	if (m->throttle_calls == 256)
		assigned = 0;			/* first look: nothing to compare with */
	else
		assigned = U64FromFullTransactionId(next) - U64FromFullTransactionId(m->next_xid);
	/* the run's own transaction ID, assigned at its first delete */
	if (!m->had_xid && FullTransactionIdIsValid(GetTopFullTransactionIdIfAny()))
	{
		m->had_xid = true;
		if (assigned > 0)
			assigned--;
	}
	m->next_xid = next;
	if (assigned > 0)
		m->others_seen = now;

	if (m->throttle_calls == 256 || now - m->others_seen > AC_OTHERS_RECENT_US)
	{
		m->pacing = false;
		return;
	}
	if (!m->pacing)
	{
		m->pacing = true;
		m->pace_start = now;
		m->pace_wal = pgWalUsage.wal_bytes;
		return;
	}
	ahead_ms = (double) (pgWalUsage.wal_bytes - m->pace_wal) * 1000.0 /
		(archive_cluster_run_max_wal_rate * 1048576.0) -
		(double) (now - m->pace_start) / 1000.0;
	if (ahead_ms >= 1.0)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 (long) Min(ahead_ms, 1000.0),
						 ac_wait_event("ArchiveClusterRunPacing"));
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		m->paced_us += GetCurrentTimestamp() - now;
	}
}

/*
 * Index entries of a batch.  With only btree indexes (no exclusion or
 * deferred constraints), they are sorted per index and inserted in index
 * order: each index is then walked from left to right, and an index whose
 * key grows with time (an id, a timestamp) gets its entries appended at its
 * rightmost page, where btree inserts take a fast path.  Otherwise they are
 * inserted row by row as an INSERT would.
 */
static bool
ac_can_sort_indexes(ResultRelInfo *rri)
{
	int			i;

	for (i = 0; i < rri->ri_NumIndices; i++)
	{
		Relation	index = rri->ri_IndexRelationDescs[i];
		IndexInfo  *ii = rri->ri_IndexRelationInfo[i];

		if (index->rd_rel->relam != BTREE_AM_OID || ii->ii_ExclusionOps != NULL ||
			!index->rd_index->indimmediate)
			return false;
	}
	return true;
}

static void
ac_index_sorts_begin(AcMover *m)
{
	int			n = m->rri->ri_NumIndices;
	int			workmem = Max(maintenance_work_mem / Max(n, 1), 1024);
	int			i;

	for (i = 0; i < n; i++)
	{
		Relation	index = m->rri->ri_IndexRelationDescs[i];

		m->isorts[i] = tuplesort_begin_index_btree(m->arc, index, false, false,
												   workmem, NULL, TUPLESORT_NONE);
	}
}

/* Add the index entries of one appended row to the sorts. */
static void
ac_index_sorts_put(AcMover *m, TupleTableSlot *slot)
{
	ExprContext *econtext = GetPerTupleExprContext(m->estate);
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	int			i;

	econtext->ecxt_scantuple = slot;
	for (i = 0; i < m->rri->ri_NumIndices; i++)
	{
		IndexInfo  *ii = m->rri->ri_IndexRelationInfo[i];

		if (ii->ii_Predicate != NIL)
		{
			if (m->predicates[i] == NULL)
				m->predicates[i] = ExecPrepareQual(ii->ii_Predicate, m->estate);
			if (!ExecQual(m->predicates[i], econtext))
				continue;
		}
		FormIndexDatum(ii, slot, m->estate, values, isnull);
		tuplesort_putindextuplevalues(m->isorts[i], m->rri->ri_IndexRelationDescs[i],
									  &slot->tts_tid, values, isnull);
	}
}

/* Insert the sorted entries of each index; unique indexes are checked. */
static void
ac_index_sorts_finish(AcMover *m)
{
	int			i;

	for (i = 0; i < m->rri->ri_NumIndices; i++)
	{
		Relation	index = m->rri->ri_IndexRelationDescs[i];
		IndexInfo  *ii = m->rri->ri_IndexRelationInfo[i];
		TupleDesc	desc = RelationGetDescr(index);
		IndexTuple	itup;
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];

		tuplesort_performsort(m->isorts[i]);
		while ((itup = tuplesort_getindextuple(m->isorts[i], true)) != NULL)
		{
			CHECK_FOR_INTERRUPTS();
			ac_throttle(m);
			index_deform_tuple(itup, desc, values, isnull);
			index_insert(index, values, isnull, &itup->t_tid, m->arc,
						 index->rd_index->indisunique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO,
						 false, ii);
		}
		tuplesort_end(m->isorts[i]);
		m->isorts[i] = NULL;
	}
}

/* Append the buffered slots to the archive, then their index entries. */
static void
ac_flush(AcMover *m)
{
	int			i;

	if (m->nslots == 0)
		return;
	/*
	 * Skip the free space map: reusing holes left in earlier pages would put
	 * rows of later keys among those of earlier ones.  Always append.
	 */
	table_multi_insert(m->arc, m->slots, m->nslots, m->cid,
					   TABLE_INSERT_SKIP_FSM, m->bistate);
	for (i = 0; i < m->nslots; i++)
	{
		if (m->rri->ri_NumIndices > 0 && m->sorted_indexes)
			ac_index_sorts_put(m, m->slots[i]);
		else if (m->rri->ri_NumIndices > 0)
		{
			List	   *recheck = ac_insert_index_tuples(m->rri, m->slots[i], m->estate);

			if (recheck != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("deferrable unique constraints on \"%s\" are not supported",
								RelationGetRelationName(m->arc))));
		}
		ExecClearTuple(m->slots[i]);
		ResetPerTupleExprContext(m->estate);
	}
	m->nslots = 0;
}

/*
 * Delete the collected rows from current, sort the ones deleted, append
 * them to the archive.  Returns the number of rows moved.
 */
static int64
ac_move_batch(AcMover *m, ItemPointerData *tids, int64 ntids, Snapshot snapshot)
{
	Tuplesortstate *sort;
	int64		moved = 0;
	int64		i;

	sort = tuplesort_begin_heap(RelationGetDescr(m->cur), m->nkeys, m->sortcols,
								m->sortops, m->sortcolls, m->nullsfirst,
								maintenance_work_mem, NULL, TUPLESORT_NONE);

	for (i = 0; i < ntids; i++)
	{
		TM_FailureData tmfd;
		TM_Result	res;

		CHECK_FOR_INTERRUPTS();
		ac_throttle(m);
		res = table_tuple_delete(m->cur, &tids[i], m->cid, snapshot,
								 InvalidSnapshot, false, &tmfd, false);
		if (res != TM_Ok)
			continue;			/* changed or locked meanwhile: next run */
		/* the version we just deleted is still there for us to read */
		if (!table_tuple_fetch_row_version(m->cur, &tids[i], SnapshotAny, m->fetchslot))
			elog(ERROR, "could not fetch deleted row (%u,%u)",
				 ItemPointerGetBlockNumber(&tids[i]), ItemPointerGetOffsetNumber(&tids[i]));
		tuplesort_puttupleslot(sort, m->fetchslot);
		ExecClearTuple(m->fetchslot);
		moved++;
	}
	ac_pause_point("deleted", 2);

	tuplesort_performsort(sort);
	if (m->sorted_indexes)
		ac_index_sorts_begin(m);
	while (tuplesort_gettupleslot(sort, true, false, m->sortslot, NULL))
	{
		TupleTableSlot *dst = m->slots[m->nslots];

		CHECK_FOR_INTERRUPTS();
		ac_throttle(m);
		if (m->map)
			execute_attr_map_slot(m->map, m->sortslot, dst);
		else
			ExecCopySlot(dst, m->sortslot);
		/* constraints added to the archive alone are checked too */
		if (m->arc->rd_att->constr)
			ExecConstraints(m->rri, dst, m->estate);
		if (++m->nslots == AC_MULTI_INSERT)
			ac_flush(m);
	}
	ac_flush(m);
	tuplesort_end(sort);
	if (m->sorted_indexes)
		ac_index_sorts_finish(m);
	CommandCounterIncrement();
	return moved;
}

/*
 * Move the eligible rows of one registered table, sorted together, in
 * batches of at most archive_cluster.max_batch_rows rows.  The table is due
 * when at least "threshold" rows are eligible; with force, any eligible rows
 * are moved.  Stops after max_batches batches (0: no limit), and then says
 * in *more_left whether rows were left unseen.
 */
static int64
ac_move(AcTableConfig *cfg, int64 threshold, bool force, int max_batches,
		int *nbatches, bool *more_left, int64 *paced_us)
{
	AcMover		m;
	Snapshot	snapshot;
	TableScanDesc scan;
	TupleTableSlot *scanslot;
	AttrNumber	ageattno;
	int64		cutoff;
	ItemPointerData *tids;
	int64		ntids = 0;
	int64		maxtids;
	int64		batch_rows;
	int64		moved = 0;
	Relation	view;
	int			natts;
	AttrNumber *curatt;
	AttrNumber *arcatt;
	Oid			agetype;
	bool		identity;
	int			i;

	memset(&m, 0, sizeof(m));
	m.cur = table_open(cfg->current, RowExclusiveLock);
	m.arc = table_open(cfg->archive, RowExclusiveLock);
	m.cid = GetCurrentCommandId(true);
	/* a published table needs a replica identity for the deletes, as DELETE does */
	CheckCmdReplicaIdentity(m.cur, CMD_DELETE);

	/*
	 * A row goes from the columns of current to those of archive that the
	 * view reads as the same column: by number, as the view does, not by
	 * name (tiers.c).
	 */
	view = relation_open(cfg->relation, AccessShareLock);
	natts = RelationGetDescr(view)->natts;
	curatt = palloc(sizeof(AttrNumber) * natts);
	arcatt = palloc(sizeof(AttrNumber) * natts);
	ac_tier_columns(view, cfg->current, cfg->archive, curatt, arcatt);

	ageattno = curatt[ac_view_column(view, cfg->age_column)];
	agetype = getBaseType(TupleDescAttr(RelationGetDescr(m.cur), ageattno - 1)->atttypid);
	if (agetype != TIMESTAMPOID && agetype != TIMESTAMPTZOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("age column \"%s\" of view \"%s\" must be of type timestamp or timestamptz",
						cfg->age_column, RelationGetRelationName(view)),
				 errdetail("It is of type %s.", format_type_be(agetype)),
				 errhint("A column of the view was renamed to the age column's name; rename it back.")));
	cutoff = ac_cutoff_for_type(cfg, agetype);

	m.nkeys = cfg->ncluster;
	for (i = 0; i < cfg->ncluster; i++)
	{
		AttrNumber	attno = curatt[ac_view_column(view, cfg->cluster_by[i])];
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(m.cur), attno - 1);

		m.sortcols[i] = attno;
		m.sortops[i] = lookup_type_cache(att->atttypid, TYPECACHE_LT_OPR)->lt_opr;
		m.sortcolls[i] = att->attcollation;
		m.nullsfirst[i] = false;
	}

	m.map = make_attrmap(RelationGetDescr(m.arc)->natts);
	identity = RelationGetDescr(m.arc)->natts == RelationGetDescr(m.cur)->natts;
	for (i = 0; i < natts; i++)
	{
		m.map->attnums[arcatt[i] - 1] = curatt[i];
		identity &= arcatt[i] == curatt[i];
	}

	/*
	 * A column added to both tables after registration (not in the view) goes
	 * to the archive's column of the same name and type; a column of current
	 * alone would be lost in the move: refuse.
	 */
	for (i = 0; i < RelationGetDescr(m.cur)->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(m.cur), i);
		AttrNumber	a;

		if (att->attisdropped || ac_view_column_of(curatt, natts, i + 1) >= 0)
			continue;
		a = ac_unviewed_counterpart(m.cur, m.arc, arcatt, natts, i + 1);
		if (a == InvalidAttrNumber)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("column \"%s\" of \"%s\" has no counterpart in \"%s\"",
							NameStr(att->attname), RelationGetRelationName(m.cur),
							RelationGetRelationName(m.arc)),
					 errhint("Add the column to the archive table too, or unregister and register the table again.")));
		m.map->attnums[a - 1] = i + 1;
		identity &= a == i + 1;
	}
	/*
	 * Rows are copied as they are only when current's layout is archive's,
	 * as PostgreSQL's own tuple conversion decides: each column maps to
	 * itself (and has no "missing" default), or both are dropped columns of
	 * the same length and alignment.
	 */
	for (i = 0; identity && i < m.map->maplen; i++)
	{
		Form_pg_attribute c = TupleDescAttr(RelationGetDescr(m.cur), i);
		Form_pg_attribute a = TupleDescAttr(RelationGetDescr(m.arc), i);

		if (c->atthasmissing)
			identity = false;
		else if (m.map->attnums[i] == i + 1)
			continue;
		else
			identity = m.map->attnums[i] == 0 && c->attisdropped && a->attisdropped &&
				c->attlen == a->attlen && c->attalign == a->attalign;
	}
	if (identity)
	{
		free_attrmap(m.map);
		m.map = NULL;
	}
	relation_close(view, NoLock);

	m.estate = CreateExecutorState();
	m.rri = makeNode(ResultRelInfo);
	InitResultRelInfo(m.rri, m.arc, 0, NULL, 0);
	ExecOpenIndices(m.rri, false);
	m.sorted_indexes = ac_can_sort_indexes(m.rri);
	m.isorts = palloc0(sizeof(Tuplesortstate *) * Max(m.rri->ri_NumIndices, 1));
	m.predicates = palloc0(sizeof(ExprState *) * Max(m.rri->ri_NumIndices, 1));
	m.bistate = GetBulkInsertState();
	m.fetchslot = table_slot_create(m.cur, NULL);
	m.sortslot = MakeSingleTupleTableSlot(RelationGetDescr(m.cur), &TTSOpsMinimalTuple);
	for (i = 0; i < AC_MULTI_INSERT; i++)
		m.slots[i] = table_slot_create(m.arc, NULL);

	batch_rows = Max(threshold, (int64) archive_cluster_max_batch_rows);
	maxtids = Min(batch_rows, 1024 * 1024);
	tids = palloc_extended(sizeof(ItemPointerData) * maxtids, MCXT_ALLOC_HUGE);

	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	scan = table_beginscan(m.cur, snapshot, 0, NULL);
	scanslot = table_slot_create(m.cur, NULL);

	*nbatches = 0;
	*more_left = false;
	for (;;)
	{
		bool		more = table_scan_getnextslot(scan, ForwardScanDirection, scanslot);

		CHECK_FOR_INTERRUPTS();
		if (more)
		{
			bool		isnull;
			Datum		age = slot_getattr(scanslot, ageattno, &isnull);

			if (isnull || DatumGetInt64(age) >= cutoff)
				continue;
			if (ntids == maxtids)
			{
				maxtids = Min(batch_rows, maxtids * 2);
				tids = repalloc_huge(tids, sizeof(ItemPointerData) * maxtids);
			}
			tids[ntids++] = scanslot->tts_tid;
			if (ntids < batch_rows)
				continue;
		}
		if (ntids > 0 && (ntids >= threshold || force))
		{
			moved += ac_move_batch(&m, tids, ntids, snapshot);
			(*nbatches)++;
		}
		ntids = 0;
		if (!more)
			break;
		if (max_batches > 0 && *nbatches >= max_batches)
		{
			*more_left = true;
			break;
		}
	}

	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	ExecDropSingleTupleTableSlot(scanslot);
	ExecDropSingleTupleTableSlot(m.fetchslot);
	ExecDropSingleTupleTableSlot(m.sortslot);
	for (i = 0; i < AC_MULTI_INSERT; i++)
		ExecDropSingleTupleTableSlot(m.slots[i]);
	FreeBulkInsertState(m.bistate);
	table_finish_bulk_insert(m.arc, TABLE_INSERT_SKIP_FSM);
	ExecCloseIndices(m.rri);
	FreeExecutorState(m.estate);
	pfree(tids);
	table_close(m.arc, NoLock);
	table_close(m.cur, NoLock);
	*paced_us = m.paced_us;
	return moved;
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
	return ac_load_config(cfg->relation, &now, CurrentMemoryContext) &&
		now.current == cfg->current && now.archive == cfg->archive;
}

/*
 * Run one registered table: take its run lock, then move its due batches
 * as the table's owner, and record the run.  Errors propagate to the
 * caller.
 */
void
ac_run_table(AcTableConfig *cfg, bool force, int max_batches,
			 const char *started_by, AcRunResult *res)
{
	AcThreshold th;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	Oid			owner;
	char	   *relname = get_rel_name(cfg->relation);
	char		flush_after[16];

	res->rows = 0;
	res->batches = 0;
	res->more = false;
	res->paced_us = 0;
	res->threshold = 0;
	res->started = GetCurrentTimestamp();
	res->finished = res->started;

	if (relname == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", cfg->relation)));
	if (!ac_try_run_lock(cfg->relation))
	{
		res->status = "skipped: another run in progress";
		ereport(ac_is_background_worker() ? LOG : NOTICE,
				(errmsg("skipping \"%s\": another archive run is in progress",
						relname)));
		return;
	}

	ac_pause_point("locked", 1);

	/*
	 * Take the view's and the tables' locks, waiting a bounded time: a lock
	 * held for long (even by the table's owner) skips this table, never
	 * stalls the caller's other tables.  An unregistration (or a DROP) may
	 * have committed since the caller read the configuration, while this run
	 * waited: then look again.
	 */
	if (!ac_lock_relation_bounded(cfg->relation, AccessShareLock, archive_cluster_lock_timeout) ||
		!ac_lock_relation_bounded(cfg->current, RowExclusiveLock, archive_cluster_lock_timeout) ||
		!ac_lock_relation_bounded(cfg->archive, RowExclusiveLock, archive_cluster_lock_timeout))
	{
		res->status = "skipped: lock not available";
		ereport(ac_is_background_worker() ? LOG : NOTICE,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("skipping \"%s\": could not lock its view or tables within archive_cluster.lock_timeout (%d ms)",
						relname, archive_cluster_lock_timeout),
				 errhint("Another transaction holds a conflicting lock; a later run will try again.")));
		return;
	}
	if (!ac_still_registered(cfg))
	{
		res->status = "skipped: no longer registered";
		ereport(ac_is_background_worker() ? LOG : NOTICE,
				(errmsg("skipping \"%s\": it is no longer registered with archive_cluster",
						relname)));
		return;
	}

	ac_compute_threshold(cfg, &th);
	res->threshold = th.rows;
	ac_switch_to_owner(cfg->current, &save_userid, &save_sec_context, &save_nestlevel);
	owner = GetUserId();

	/*
	 * The run writes many pages through its ring of buffers; have the kernel
	 * write them back as it goes (backend_flush_after, restored with the
	 * user), as checkpoint_flush_after does for checkpoints.  Left to pile up
	 * as dirty page cache, they make every WAL flush of concurrent commits
	 * wait (docs/benchmarks.md, target 5).
	 */
	snprintf(flush_after, sizeof(flush_after), "%d", archive_cluster_run_flush_after);
	(void) set_config_option("backend_flush_after", flush_after,
							 PGC_USERSET, PGC_S_SESSION,
							 GUC_ACTION_SAVE, true, 0, false);
	res->rows = ac_move(cfg, th.rows, force, max_batches, &res->batches, &res->more,
						&res->paced_us);
	ac_restore_user(save_userid, save_sec_context, save_nestlevel);
	res->finished = GetCurrentTimestamp();
	res->status = res->batches > 0 ? "archived" : "not due";

	if (res->batches > 0)
		ac_log_run(cfg->relation, res->started, res->finished, res->rows,
				   res->batches, res->paced_us, started_by, owner, NULL);
	ac_pause_point("before_commit", 3);
}

static void
ac_put_result(ReturnSetInfo *rsinfo, Oid relation, AcRunResult *res)
{
	Datum		values[5];
	bool		nulls[5] = {false, false, false, false, false};
	Interval   *iv = palloc0(sizeof(Interval));

	iv->time = res->finished - res->started;
	values[0] = ObjectIdGetDatum(relation);
	values[1] = CStringGetTextDatum(res->status);
	values[2] = Int64GetDatum(res->rows);
	values[3] = Int32GetDatum(res->batches);
	values[4] = IntervalPGetDatum(iv);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * How a call of archive_cluster_run() was started: by a pg_cron job (its
 * background worker, or its libpq connection), else by hand.
 */
static const char *
ac_caller(void)
{
	if (MyBgworkerEntry != NULL && strcmp(MyBgworkerEntry->bgw_type, "pg_cron") == 0)
		return "pg_cron";
	if (application_name != NULL && strcmp(application_name, "pg_cron") == 0)
		return "pg_cron";
	return "manual";
}

/*
 * archive_cluster_run(relation regclass DEFAULT NULL, force boolean DEFAULT
 * false, max_batches integer DEFAULT NULL)
 *
 * With a relation: run that table (errors are raised).  Without: every
 * registered table that the caller owns; an error in one table is
 * reported as a WARNING, recorded, and the others go on.
 */
Datum
archive_cluster_run(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		force;
	int			max_batches = 0;
	AcTableConfig cfg;
	AcRunResult res;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("force must not be NULL")));
	force = PG_GETARG_BOOL(1);
	if (!PG_ARGISNULL(2))
	{
		max_batches = PG_GETARG_INT32(2);
		if (max_batches < 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("max_batches must be at least 1"),
					 errhint("Pass NULL for no limit.")));
	}
	if (RecoveryInProgress())
		ereport(ERROR,
				(errcode(ERRCODE_READ_ONLY_SQL_TRANSACTION),
				 errmsg("cannot run archive_cluster during recovery")));

	InitMaterializedSRF(fcinfo, 0);
	SPI_connect();
	(void) ac_extension_schema();

	if (!PG_ARGISNULL(0))
	{
		Oid			relation = PG_GETARG_OID(0);

		ac_check_relation_exists(relation);
		if (!ac_load_config(relation, &cfg, CurrentMemoryContext))
		{
			Oid			viewid = ac_registered_view_of(relation);

			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("relation \"%s\" is not registered with archive_cluster",
							get_rel_name(relation)),
					 OidIsValid(viewid) ?
					 errhint("Pass the registered view %s instead.", get_rel_name(viewid)) :
					 errhint("Register it first with archive_cluster_register().")));
		}
		ac_check_owner(relation);
		ac_run_table(&cfg, force, max_batches, ac_caller(), &res);
		ac_put_result(rsinfo, relation, &res);
	}
	else
	{
		List	   *relations = ac_registered_relations();
		ListCell   *lc;

		foreach(lc, relations)
		{
			Oid			relation = lfirst_oid(lc);
			MemoryContext oldcxt = CurrentMemoryContext;
			ResourceOwner oldowner = CurrentResourceOwner;

			if (!ac_load_config(relation, &cfg, CurrentMemoryContext) ||
				!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relation)))
				continue;		/* unregistered or dropped meanwhile */
			if (!ac_class_ownercheck(relation, GetUserId()))
				continue;

			BeginInternalSubTransaction(NULL);
			MemoryContextSwitchTo(oldcxt);
			PG_TRY();
			{
				ac_run_table(&cfg, force, max_batches, ac_caller(), &res);
				ReleaseCurrentSubTransaction();
				MemoryContextSwitchTo(oldcxt);
				CurrentResourceOwner = oldowner;
			}
			PG_CATCH();
			{
				ErrorData  *edata;

				MemoryContextSwitchTo(oldcxt);
				edata = CopyErrorData();
				FlushErrorState();
				RollbackAndReleaseCurrentSubTransaction();
				MemoryContextSwitchTo(oldcxt);
				CurrentResourceOwner = oldowner;

				ereport(WARNING,
						(errcode(edata->sqlerrcode),
						 errmsg("archive run of \"%s\" failed: %s",
								get_rel_name(relation), edata->message)));
				res.status = psprintf("error: %s", edata->message);
				res.rows = 0;
				res.batches = 0;
				res.finished = GetCurrentTimestamp();
				ac_log_run(relation, res.started, res.finished, 0, 0, 0, ac_caller(),
						   GetUserId(), edata->message);
				FreeErrorData(edata);
			}
			PG_END_TRY();
			ac_put_result(rsinfo, relation, &res);
		}
	}

	SPI_finish();
	return (Datum) 0;
}

/*
 * archive_cluster_table_state(relation regclass): the threshold and
 * estimates, from the tables' statistics; NULLs for a caller who may not
 * read the table (as pg_stats hides the statistics of such tables).
 */
Datum
archive_cluster_table_state(PG_FUNCTION_ARGS)
{
	Oid			relation = PG_GETARG_OID(0);
	AcTableConfig cfg;
	AcThreshold th;
	TupleDesc	tupdesc;
	Datum		values[7];
	bool		nulls[7] = {false, false, false, false, false, false, false};
	double		reltuples;
	int64		eligible;
	HeapTuple	result;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	ac_check_relation_exists(relation);
	SPI_connect();
	if (!ac_load_config(relation, &cfg, CurrentMemoryContext))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" is not registered with archive_cluster",
						get_rel_name(relation))));
	SPI_finish();

	if (pg_class_aclcheck(relation, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
	{
		for (int i = 0; i < 7; i++)
			nulls[i] = true;
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
	}

	ac_compute_threshold(&cfg, &th);
	values[0] = Int64GetDatum(th.rows);
	values[1] = CStringGetTextDatum(th.source);
	values[2] = Float8GetDatum(th.distinct_keys);
	nulls[2] = th.distinct_keys < 0;
	values[3] = Float8GetDatum(th.rows_per_page);
	nulls[3] = th.rows_per_page < 0;
	reltuples = ac_reltuples(cfg.current);
	values[4] = Int64GetDatum((int64) reltuples);
	nulls[4] = reltuples < 0;
	eligible = ac_eligible_estimate(&cfg);
	values[5] = Int64GetDatum(eligible);
	nulls[5] = eligible < 0;
	reltuples = ac_reltuples(cfg.archive);
	values[6] = Int64GetDatum((int64) reltuples);
	nulls[6] = reltuples < 0;

	result = heap_form_tuple(tupdesc, values, nulls);
	PG_RETURN_DATUM(HeapTupleGetDatum(result));
}
