/*-------------------------------------------------------------------------
 *
 * mover.c
 *		The mover: moves the eligible rows of one registered table from
 *		<t>_current to <t>_archive, sorted by the cluster key, on the table
 *		access method directly:
 *		1. scan <t>_current and collect the TIDs of eligible rows, one batch
 *		   at a time (the threshold: distinct keys x rows per page);
 *		2. delete each of them without waiting; a row that is being changed
 *		   or was changed since the scan's snapshot is left for a later run,
 *		   and only rows actually deleted go on.  In table mode (<t> is
 *		   current, <t>_archive its inheritance child) the delete marks the
 *		   row as moved, as a cross-partition UPDATE does: a transaction
 *		   that waited to update, delete or lock it then fails with
 *		   SQLSTATE 40001 instead of skipping it as deleted;
 *		3. sort those rows by the cluster key (tuplesort);
 *		4. write them into <t>_archive a page at a time, each onto an empty
 *		   page, with their entries in an index on the cluster key, then
 *		   insert their other index entries, sorted per index
 *		   (archive_writer.c), and note the pages written in the archive's
 *		   loose set (loose.c);
 *		paced among other writers (pace.c).  All of it happens in the
 *		caller's transaction, so it commits or rolls back as a whole: a row
 *		is in exactly one of the two tables.
 *
 *		A run whose batch the archive refuses (a constraint of <t>_archive
 *		alone, a key already archived) is rolled back and done again
 *		"carefully": each eligible row is checked against the archive's
 *		constraints first (archive_checks.c), and the refused ones stay in
 *		<t>_current, counted and described for the caller to report.
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

#include "registry/archive_checks.h"
#include "archive_cluster.h"
#include "archive/archive_writer.h"
#include "compat.h"
#include "base/guc.h"
#include "registry/constraints.h"
#include "table/key_range.h"
#include "archive/loose.h"
#include "archive/mover.h"
#include "pace/replica_wait.h"
#include "pace/pace.h"
#include "pace/progress.h"
#include "table/table_mode.h"
#include "archive/threshold.h"
#include "registry/tiers.h"
#include "base/subxact.h"
#include "base/util.h"

/* State of one run of the mover over one table. */
typedef struct AcMover
{
	Oid			relation;		/* as registered */
	Relation	cur;
	Relation	arc;
	AcWriter	w;				/* into the archive */
	AcPace		pace;			/* archive_cluster.run_max_wal_rate, among writers */
	AttrMap    *map;			/* columns of archive from current; NULL: same */
	TupleTableSlot *fetchslot;
	TupleTableSlot *sortslot;
	int			nkeys;
	AttrNumber	sortcols[AC_MAX_CLUSTER_COLS];
	Oid			sortops[AC_MAX_CLUSTER_COLS];
	Oid			sortcolls[AC_MAX_CLUSTER_COLS];
	bool		nullsfirst[AC_MAX_CLUSTER_COLS];
	CommandId	cid;
	bool		changing_tier;	/* table mode: deletes mark rows as moved */
	/* careful runs: each eligible row checked against the archive first */
	AcArchiveChecks *checks;
	TupleTableSlot *checkslot;
	MemoryContext rowcxt;		/* reset after each row checked */
	AcMoveResult *res;			/* rows left behind are counted here */
} AcMover;

/* A row another transaction changed or locked since the scan. */
static void
ac_note_busy(AcMover *m, ItemPointer tid, Snapshot snapshot)
{
	if (m->res->busy++ == 0 &&
		table_tuple_fetch_row_version(m->cur, tid, snapshot, m->fetchslot))
	{
		m->res->busy_key = ac_row_key(m->cur, m->fetchslot);
		ExecClearTuple(m->fetchslot);
	}
}

/*
 * Careful runs: does the archive take this row of current (as scanned, the
 * version a delete will remove)?  A refused row is counted, the first one
 * described.
 */
static bool
ac_archive_takes(AcMover *m, TupleTableSlot *scanslot)
{
	MemoryContext oldcxt = MemoryContextSwitchTo(m->rowcxt);
	const char *constraint = NULL;
	AcRefusal	refusal;

	if (m->map)
		execute_attr_map_slot(m->map, scanslot, m->checkslot);
	else
		ExecCopySlot(m->checkslot, scanslot);
	refusal = ac_archive_refuses(m->checks, m->checkslot, &constraint);
	MemoryContextSwitchTo(oldcxt);
	if (refusal != AC_TAKES && m->res->refused++ == 0)
	{
		m->res->refused_sqlstate = ac_refusal_sqlstate(refusal);
		m->res->refused_detail = ac_refusal_text(refusal, ac_row_key(m->arc, m->checkslot),
												 constraint, RelationGetRelationName(m->arc));
	}
	ExecClearTuple(m->checkslot);
	MemoryContextReset(m->rowcxt);
	return refusal == AC_TAKES;
}

/*
 * Delete the collected rows from current, sort the ones deleted, write
 * them into the archive.  Returns the number of rows moved.
 */
static int64
ac_move_rows(AcMover *m, ItemPointerData *tids, int64 ntids, Snapshot snapshot)
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
		ac_pace(&m->pace);
		if ((i & 255) == 0)
			ac_progress_rows(i);
		res = ac_table_tuple_delete(m->cur, &tids[i], m->cid, snapshot,
									InvalidSnapshot, false, &tmfd, m->changing_tier);
		if (res != TM_Ok)
		{
			/* changed or locked meanwhile: a later run (deleted: gone) */
			if (res != TM_Deleted)
				ac_note_busy(m, &tids[i], snapshot);
			continue;
		}
		/* the version we just deleted is still there for us to read */
		if (!table_tuple_fetch_row_version(m->cur, &tids[i], SnapshotAny, m->fetchslot))
			elog(ERROR, "could not fetch deleted row (%u,%u)",
				 ItemPointerGetBlockNumber(&tids[i]), ItemPointerGetOffsetNumber(&tids[i]));
		tuplesort_puttupleslot(sort, m->fetchslot);
		ExecClearTuple(m->fetchslot);
		moved++;
	}
	ac_progress_rows(ntids);
	ac_pause_point("deleted", 2);

	ac_progress_phase(AC_PHASE_SORTING);
	tuplesort_performsort(sort);
	ac_progress_phase(AC_PHASE_WRITING);
	while (tuplesort_gettupleslot(sort, true, false, m->sortslot, NULL))
	{
		TupleTableSlot *dst = ac_writer_slot(&m->w);

		CHECK_FOR_INTERRUPTS();
		if (m->map)
			execute_attr_map_slot(m->map, m->sortslot, dst);
		else
			ExecCopySlot(dst, m->sortslot);
		/* constraints added to the archive alone are checked too */
		if (m->arc->rd_att->constr)
			ExecConstraints(m->w.rri, dst, m->w.estate);
		ac_writer_add(&m->w);
	}
	ac_writer_flush(&m->w);
	tuplesort_end(sort);
	ac_writer_finish(&m->w);
	/* the batch's pages are loose: a compaction may rewrite them */
	ac_loose_add(m->relation, m->w.blocks, m->w.nblocks);
	m->w.nblocks = 0;
	CommandCounterIncrement();
	return moved;
}

/*
 * ac_move_rows(); in table mode, the cached bounds of the archive's keys
 * that spare <t>'s writers a look into the archive (key_range.c) are not
 * trusted from before the first delete until the batch's index entries are
 * all in the archive.
 */
static int64
ac_move_batch(AcMover *m, ItemPointerData *tids, int64 ntids, Snapshot snapshot)
{
	int64		moved;

	if (!m->changing_tier)
		return ac_move_rows(m, tids, ntids, snapshot);
	ac_key_range_batch_begin(RelationGetRelid(m->arc));
	PG_TRY();
	{
		moved = ac_move_rows(m, tids, ntids, snapshot);
	}
	PG_FINALLY();
	{
		ac_key_range_batch_end();
	}
	PG_END_TRY();
	return moved;
}

/*
 * Move the eligible rows of one registered table, sorted together, in
 * batches of at most archive_cluster.max_batch_rows rows.  The table is due
 * when at least "threshold" rows are eligible; with force, any eligible rows
 * are moved.  Stops after max_batches batches (0: no limit), and then says
 * in res->more_left whether rows were left unseen.  Careful: rows the
 * archive would refuse are left out of the batches.
 */
static void
ac_move_once(AcTableConfig *cfg, int64 threshold, bool force, int max_batches,
			 bool careful, bool wait_replicas, AcMoveResult *res)
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
	Relation	view;
	char	   *viewname;
	int			natts;
	AttrNumber *curatt;
	AttrNumber *arcatt;
	AttrNumber	arc_keyattnos[AC_MAX_CLUSTER_COLS];
	Oid			agetype;
	bool		identity;
	int			i;

	memset(&m, 0, sizeof(m));
	m.res = res;
	m.relation = cfg->relation;
	m.cur = table_open(cfg->current, RowExclusiveLock);
	m.arc = table_open(cfg->archive, RowExclusiveLock);
	m.cid = GetCurrentCommandId(true);
	m.changing_tier = cfg->table_mode;
	/* a published table needs a replica identity for the deletes, as DELETE does */
	CheckCmdReplicaIdentity(m.cur, CMD_DELETE);
	/* constraints added since registration that a run cannot keep */
	viewname = get_rel_name(cfg->relation);
	ac_check_referencing_keys(m.cur, viewname, false);
	if (cfg->table_mode)
		ac_table_mode_check(m.cur, m.arc, cfg->age_column, false);
	else
	{
		ac_check_unique_indexes(m.cur, viewname, false);
		ac_check_unique_indexes(m.arc, viewname, false);
	}

	/*
	 * A row goes from the columns of current to those of archive that the
	 * view reads as the same column: by number, as the view does, not by
	 * name (tiers.c).  In table mode, "view" is <t> itself, whose columns
	 * its inheritance child has by name.
	 */
	view = relation_open(cfg->relation, AccessShareLock);
	natts = RelationGetDescr(view)->natts;
	ac_tiers_columns(view, cfg->table_mode, cfg->current, m.arc, &curatt, &arcatt);

	ageattno = curatt[ac_view_column_required(view, cfg->age_column)];
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
		AttrNumber	attno = curatt[ac_view_column_required(view, cfg->cluster_by[i])];
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(m.cur), attno - 1);

		m.sortcols[i] = attno;
		arc_keyattnos[i] = arcatt[ac_view_column_required(view, cfg->cluster_by[i])];
		m.sortops[i] = lookup_type_cache(att->atttypid, TYPECACHE_LT_OPR)->lt_opr;
		m.sortcolls[i] = att->attcollation;
		m.nullsfirst[i] = false;
	}

	m.map = make_attrmap(RelationGetDescr(m.arc)->natts);
	identity = RelationGetDescr(m.arc)->natts == RelationGetDescr(m.cur)->natts;
	for (i = 0; i < natts; i++)
	{
		if (arcatt[i] == 0)
		{
			identity = false;	/* table mode: a dropped column of <t> */
			continue;
		}
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

	ac_pace_init(&m.pace, archive_cluster_run_max_wal_rate, false,
				 ac_wait_event("ArchiveClusterRunPacing"));
	/* the moved rows are deleted in place */
	ac_writeback_add(&m.pace.wb, m.cur);
	/* careful: unique indexes are probed as for ON CONFLICT */
	ac_writer_begin(&m.w, m.arc, careful, &m.pace);
	ac_writer_set_order(&m.w, m.nkeys, arc_keyattnos, m.sortops, m.sortcolls);
	if (careful)
	{
		m.checks = ac_archive_checks_begin(m.w.rri, m.w.estate);
		m.checkslot = table_slot_create(m.arc, NULL);
		m.rowcxt = AllocSetContextCreate(CurrentMemoryContext, "archive_cluster row check",
										 ALLOCSET_DEFAULT_SIZES);
	}
	m.fetchslot = table_slot_create(m.cur, NULL);
	m.sortslot = MakeSingleTupleTableSlot(RelationGetDescr(m.cur), &TTSOpsMinimalTuple);

	batch_rows = Max(threshold, (int64) archive_cluster_max_batch_rows);
	maxtids = Min(batch_rows, 1024 * 1024);
	tids = palloc_extended(sizeof(ItemPointerData) * maxtids, MCXT_ALLOC_HUGE);

	ac_progress_phase(AC_PHASE_SCANNING);
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	scan = ac_table_beginscan(m.cur, snapshot, 0, NULL);
	scanslot = table_slot_create(m.cur, NULL);

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
			/* careful: a row the archive refuses is not eligible */
			if (m.checks != NULL && !ac_archive_takes(&m, scanslot))
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
			/* its WAL waits for the standbys that lag too far behind */
			if (wait_replicas)
			{
				int64		waited = 0;

				if (!ac_call_wait_for_replicas(viewname, false, &waited))
				{
					res->lagged = true;
					res->more_left = true;
					break;
				}
				if (waited > 0)
					ac_pace_restart(&m.pace);
			}
			ac_progress_batch(ntids);
			ac_progress_phase(AC_PHASE_DELETING);
			res->moved += ac_move_batch(&m, tids, ntids, snapshot);
			res->batches++;
			ac_progress_phase(AC_PHASE_SCANNING);
		}
		ntids = 0;
		if (!more)
			break;
		if (max_batches > 0 && res->batches >= max_batches)
		{
			res->more_left = true;
			break;
		}
	}

	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	ExecDropSingleTupleTableSlot(scanslot);
	ExecDropSingleTupleTableSlot(m.fetchslot);
	ExecDropSingleTupleTableSlot(m.sortslot);
	if (m.checkslot)
		ExecDropSingleTupleTableSlot(m.checkslot);
	res->bytes = m.w.bytes;
	ac_writer_end(&m.w);
	pfree(tids);
	table_close(m.arc, NoLock);
	table_close(m.cur, NoLock);
	res->paced_us = m.pace.paced_us;
	ac_pace_report(&m.pace, &res->pace);
}

/* A copy in the caller's memory of a string of the mover's (NULL stays). */
static char *
ac_keep(const char *s)
{
	return s ? pstrdup(s) : NULL;
}

/* a run's moves, in a subtransaction of their own (ac_subxact_call) */
typedef struct AcMoveCall
{
	AcTableConfig *cfg;
	int64		threshold;
	bool		force;
	int			max_batches;
	bool		careful;
	bool		wait_replicas;
	AcMoveResult *res;
} AcMoveCall;

static void
ac_move_call(void *arg)
{
	AcMoveCall *m = (AcMoveCall *) arg;

	ac_move_once(m->cfg, m->threshold, m->force, m->max_batches, m->careful,
				 m->wait_replicas, m->res);
}

/*
 * Move the eligible rows of one registered table (ac_move_once), in a
 * subtransaction and a memory context of its own, both gone when it ends.
 * When the archive refuses a row (an integrity constraint error, SQLSTATE
 * class 23), the run is rolled back and done again carefully, leaving out
 * the rows the archive refuses, so that one such row does not stop
 * archiving for good.  Any other error, or one in a careful run, is raised
 * as it is.
 */
void
ac_move(AcTableConfig *cfg, int64 threshold, bool force, int max_batches,
		bool careful, bool wait_replicas, AcMoveResult *res)
{
	MemoryContext caller = CurrentMemoryContext;
	AcMoveCall	m;
	int			attempt;

	m.cfg = cfg;
	m.threshold = threshold;
	m.force = force;
	m.max_batches = max_batches;
	m.wait_replicas = wait_replicas;
	m.res = res;
	for (attempt = careful ? 1 : 0;; attempt++)
	{
		MemoryContext movecxt = AllocSetContextCreate(caller, "archive_cluster run",
													  ALLOCSET_DEFAULT_SIZES);
		ErrorData  *edata;

		memset(res, 0, sizeof(*res));
		res->careful = attempt > 0;
		m.careful = attempt > 0;
		edata = ac_subxact_call(ac_move_call, &m, movecxt);
		if (edata == NULL)
		{
			res->refused_detail = ac_keep(res->refused_detail);
			res->busy_key = ac_keep(res->busy_key);
			MemoryContextDelete(movecxt);
			return;
		}
		MemoryContextDelete(movecxt);
		if (attempt > 0 ||
			ERRCODE_TO_CATEGORY(edata->sqlerrcode) != ERRCODE_INTEGRITY_CONSTRAINT_VIOLATION)
			ReThrowError(edata);
		FreeErrorData(edata);
	}
}
