/*-------------------------------------------------------------------------
 *
 * compact.c
 *		Compaction of a registered table's archive: archive_cluster_compact()
 *		and ac_compact_table(), which the worker shares.
 *
 *		Each run appends one sorted batch, so a key's archived rows lie in
 *		one island per run, each about a partly filled page more than its
 *		rows need.  A compaction reads the rows on the archive's loose pages
 *		(loose.c: the pages runs appended since the last compaction, and the
 *		ends of keys it left itself), deletes them and writes them again
 *		sorted by the cluster key, a page at a time, each onto an empty page:
 *		- while a key has a page's worth of rows left, its oldest fill a
 *		  page of their own, which is "settled": it is what the same rows
 *		  freshly rewritten in cluster order would give, and no compaction
 *		  reads it again;
 *		- the rest of each key, less than a page, goes onto "loose" pages
 *		  with the ends of the neighbouring keys, which the next compaction
 *		  rewrites with the rows runs added meanwhile.
 *		So a key's rows end up on its settled pages plus one island of loose
 *		pages, and a row is rewritten until its page is settled.
 *
 *		The guarantees of a run: one transaction; rows deleted without
 *		waiting (a row another transaction is changing or locking stays
 *		where it is, its page loose) and marked as moved, so that a
 *		transaction that waited to update, delete or lock one fails with
 *		SQLSTATE 40001 instead of missing it; the table's run lock, so that
 *		runs and compactions of a table never overlap; as the table's owner;
 *		paced by archive_cluster.compaction_max_wal_rate.  The pages it
 *		emptied are freed by a VACUUM of the archive (the worker's, after
 *		compacting) and reused by the next run or compaction, which take
 *		empty pages from the free space map before they add new ones
 *		(archive_writer.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type_d.h"
#include "common/pg_prng.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufpage.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/sortsupport.h"
#include "utils/tuplesort.h"
#include "utils/typcache.h"

#include "archive_cluster.h"
#include "archive/archive_writer.h"
#include "archive/compact.h"
#include "compat.h"
#include "base/guc.h"
#include "archive/key_sample.h"
#include "archive/loose.h"
#include "pace/pace.h"
#include "pace/progress.h"
#include "pace/replica_wait.h"
#include "registry/tiers.h"
#include "archive/table_job.h"
#include "base/util.h"
#include "registry/config.h"

PG_FUNCTION_INFO_V1(archive_cluster_compact);

/* State of one compaction of one archive. */
typedef struct AcCompactor
{
	Relation	arc;
	AcPace		pace;
	AcWriter	settled;		/* the page of one key being filled */
	AcWriter	loose;			/* the ends of keys, together */
	TupleTableSlot *rowslot;	/* the next sorted row */
	AttrNumber	keyattno;		/* the leading cluster column */
	SortSupportData keysort;
	MemoryContext keycxt;		/* the current key's copy */
	Datum		key;
	bool		key_isnull;
	bool		have_key;
	BlockNumber *keep;			/* pages left loose besides loose's own */
	int			nkeep;
	int			maxkeep;
	int64		settled_pages;
	int64		busy;
} AcCompactor;

/* Keep this page loose (a row left on it, or one that did not fit). */
static void
ac_keep_loose(AcCompactor *c, BlockNumber blk)
{
	if (c->nkeep == c->maxkeep)
	{
		c->maxkeep *= 2;
		c->keep = repalloc_huge(c->keep, sizeof(BlockNumber) * c->maxkeep);
	}
	c->keep[c->nkeep++] = blk;
}

/*
 * Write settled's buffered rows, a page's worth of one key, onto a page of
 * their own; rows that did not fit after all leave the page they went to
 * loose.
 */
static void
ac_flush_settled(AcCompactor *c)
{
	int			before = c->settled.nblocks;
	BlockNumber blk;
	int			i;

	blk = ac_writer_flush(&c->settled);
	for (i = before; i < c->settled.nblocks; i++)
		if (c->settled.blocks[i] != blk)
			ac_keep_loose(c, c->settled.blocks[i]);
	c->settled.nblocks = before;
	if (blk != InvalidBlockNumber)
		c->settled_pages++;
}

/*
 * The end of a key: its rows short of a page go to the loose pages; a page
 * that one more of its last row would not fit in is full, and settles.
 */
static void
ac_end_key(AcCompactor *c)
{
	int			i;

	if (c->settled.nslots > 0 &&
		!ac_writer_fits(&c->settled, c->settled.slots[c->settled.nslots - 1]))
	{
		ac_flush_settled(c);
		return;
	}
	for (i = 0; i < c->settled.nslots; i++)
	{
		ExecCopySlot(ac_writer_slot(&c->loose), c->settled.slots[i]);
		ac_writer_add(&c->loose);
	}
	ac_writer_clear(&c->settled);
}

/* Is the row in rowslot of another key than the rows before it? */
static bool
ac_new_key(AcCompactor *c)
{
	bool		isnull;
	Datum		key = slot_getattr(c->rowslot, c->keyattno, &isnull);
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(c->arc), c->keyattno - 1);
	MemoryContext oldcxt;

	if (c->have_key && isnull == c->key_isnull &&
		(isnull || ApplySortComparator(key, false, c->key, false, &c->keysort) == 0))
		return false;
	MemoryContextReset(c->keycxt);
	oldcxt = MemoryContextSwitchTo(c->keycxt);
	c->key = isnull ? (Datum) 0 : datumCopy(key, att->attbyval, att->attlen);
	MemoryContextSwitchTo(oldcxt);
	c->key_isnull = isnull;
	c->have_key = true;
	return true;
}

/*
 * Write the sorted rows: settled pages of one key, the ends of keys loose.
 * The sort holds each row's cluster columns and TID (ac_sort_desc); the row
 * is the version this transaction deleted, which stays on its page until
 * the transaction ends.
 */
static void
ac_write_sorted(AcCompactor *c, Tuplesortstate *sort, TupleDesc keydesc)
{
	TupleTableSlot *sortslot = MakeSingleTupleTableSlot(keydesc, &TTSOpsMinimalTuple);
	AttrNumber	tidattno = keydesc->natts;

	while (tuplesort_gettupleslot(sort, true, false, sortslot, NULL))
	{
		ItemPointerData tid;
		bool		isnull;

		CHECK_FOR_INTERRUPTS();
		tid = *(ItemPointer) DatumGetPointer(slot_getattr(sortslot, tidattno, &isnull));
		Assert(!isnull);
		if (!table_tuple_fetch_row_version(c->arc, &tid, SnapshotAny, c->rowslot))
			elog(ERROR, "could not fetch deleted row (%u,%u)",
				 ItemPointerGetBlockNumber(&tid), ItemPointerGetOffsetNumber(&tid));
		if (ac_new_key(c))
			ac_end_key(c);
		/* a page full of the key's rows: settled */
		if (!ac_writer_fits(&c->settled, c->rowslot))
			ac_flush_settled(c);
		ExecCopySlot(ac_writer_slot(&c->settled), c->rowslot);
		ac_writer_add(&c->settled);
	}
	ac_end_key(c);
	(void) ac_writer_flush(&c->loose);
	ExecDropSingleTupleTableSlot(sortslot);
}

/*
 * What a compaction sorts: the cluster columns of a row and its TID (the
 * last sort column, so that a key's rows are read back in page order), not
 * the row.  On the seed's table that is a third of the row, and the sort of
 * a compaction of 1.4M rows fits in maintenance_work_mem where whole rows
 * spilled 180 MB to a temporary file, which the kernel wrote back in one
 * burst in front of others' commits (docs/bench/history.md).  A tail pass
 * over a leaf partition sorts the same way (partition/leaf_pass.c).
 */
TupleDesc
ac_sort_desc(Relation arc, int ncluster, const AttrNumber *cols)
{
	TupleDesc	desc = CreateTemplateTupleDesc(ncluster + 1);
	int			i;

	for (i = 0; i < ncluster; i++)
		TupleDescCopyEntry(desc, i + 1, RelationGetDescr(arc), cols[i]);
	TupleDescInitEntry(desc, ncluster + 1, "tid", TIDOID, -1, 0);
	TupleDescFinalize(desc);
	return desc;
}

/* Put the cluster columns and the TID of the row in rowslot into the sort. */
void
ac_sort_put(Tuplesortstate *sort, TupleTableSlot *keyslot, TupleTableSlot *rowslot,
			const AttrNumber *cols, int ncluster, ItemPointer tid)
{
	int			i;

	ExecClearTuple(keyslot);
	for (i = 0; i < ncluster; i++)
		keyslot->tts_values[i] = slot_getattr(rowslot, cols[i], &keyslot->tts_isnull[i]);
	keyslot->tts_values[ncluster] = PointerGetDatum(tid);
	keyslot->tts_isnull[ncluster] = false;
	ExecStoreVirtualTuple(keyslot);
	tuplesort_puttupleslot(sort, keyslot);
}

/*
 * The rows on the loose pages that this transaction's snapshot sees, range
 * after range until archive_cluster.max_batch_rows rows are collected (one
 * compaction is one transaction: bounded); *nranges gets the ranges read,
 * the others are left for the next compaction.  New rows are written only
 * once all are collected, so none of them is read back, wherever it goes.
 */
static ItemPointerData *
ac_collect_loose(Relation arc, AcLooseSet *loose, Snapshot snapshot, int64 *ntids,
				 int *nranges)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(arc);
	TupleTableSlot *slot = table_slot_create(arc, NULL);
	int64		max = 1024;
	ItemPointerData *tids = palloc_extended(sizeof(ItemPointerData) * max, MCXT_ALLOC_HUGE);
	int			r;

	*ntids = 0;
	for (r = 0; r < loose->nranges && *ntids < archive_cluster_max_batch_rows; r++)
	{
		BlockNumber end = Min(loose->ranges[r].end, nblocks);
		ItemPointerData mintid;
		ItemPointerData maxtid;
		TableScanDesc scan;

		if (loose->ranges[r].start >= end)
			continue;
		ItemPointerSet(&mintid, loose->ranges[r].start, FirstOffsetNumber);
		ItemPointerSet(&maxtid, end - 1, MaxOffsetNumber);
		scan = ac_table_beginscan_tidrange(arc, snapshot, &mintid, &maxtid);
		while (table_scan_getnextslot_tidrange(scan, ForwardScanDirection, slot))
		{
			CHECK_FOR_INTERRUPTS();
			if (*ntids == max)
			{
				max *= 2;
				tids = repalloc_huge(tids, sizeof(ItemPointerData) * max);
			}
			tids[(*ntids)++] = slot->tts_tid;
		}
		table_endscan(scan);
	}
	*nranges = r;
	ExecDropSingleTupleTableSlot(slot);
	return tids;
}

/*
 * A deferrable unique constraint on the archive would be checked only after
 * every row was rewritten (as for runs, which check it row by row): refused
 * before anything is done.  Also for a pass over a leaf partition
 * (partition/leaf_pass.c).
 */
void
ac_check_immediate_unique(Relation arc, const char *hint)
{
	List	   *indexes = RelationGetIndexList(arc);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		bool		deferrable = index->rd_index->indisunique && !index->rd_index->indimmediate;
		char	   *name = pstrdup(RelationGetRelationName(index));

		index_close(index, AccessShareLock);
		if (deferrable)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot rewrite the rows of \"%s\": its unique index \"%s\" is deferrable",
							RelationGetRelationName(arc), name),
					 errhint("%s", hint)));
	}
	list_free(indexes);
}

/*
 * Compact the archive of one registered table, in the caller's transaction,
 * as whoever calls (ac_compact_table: the table's owner).  Returns the rows
 * rewritten; *bytes, *paced_us and *busy get the rest.
 */
static int64
ac_compact_rows(AcTableConfig *cfg, int64 *bytes, int64 *paced_us, AcPaceReport *pace, int64 *busy)
{
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext, "archive_cluster compaction",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);
	AcCompactor c;
	AcLooseSet	loose;
	/* the cluster columns, then the TID */
	AttrNumber	cols[AC_MAX_CLUSTER_COLS + 1];
	Oid			ops[AC_MAX_CLUSTER_COLS + 1];
	Oid			colls[AC_MAX_CLUSTER_COLS + 1];
	bool		nullsfirst[AC_MAX_CLUSTER_COLS + 1];
	AttrNumber	sortcols[AC_MAX_CLUSTER_COLS + 1];
	Snapshot	snapshot;
	Tuplesortstate *sort;
	TupleDesc	keydesc;
	TupleTableSlot *keyslot;
	TupleTableSlot *fetchslot;
	ItemPointerData *tids;
	int64		ntids;
	int			nread;
	int64		rows;
	CommandId	cid;
	int64		i;

	memset(&c, 0, sizeof(c));
	c.arc = table_open(cfg->archive, RowExclusiveLock);
	/* a published archive needs a replica identity for the deletes, as DELETE does */
	CheckCmdReplicaIdentity(c.arc, CMD_DELETE);
	ac_check_immediate_unique(c.arc, "Make the constraint NOT DEFERRABLE, or turn compaction off for this table's database (archive_cluster.compaction).");
	ac_archive_sort_columns(cfg, c.arc, cols, ops, colls, nullsfirst);
	ac_loose_load(cfg->relation, &loose);
	if (loose.nranges == 0)
	{
		table_close(c.arc, NoLock);
		MemoryContextSwitchTo(oldcxt);
		MemoryContextDelete(cxt);
		*bytes = *paced_us = *busy = 0;
		memset(pace, 0, sizeof(AcPaceReport));
		return 0;
	}

	/* the deletes and the writes in one command, after the SPI calls above */
	cid = GetCurrentCommandId(true);
	ac_progress_phase(AC_PHASE_SCANNING);
	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	tids = ac_collect_loose(c.arc, &loose, snapshot, &ntids, &nread);
	ac_progress_batch(ntids);
	ac_progress_phase(AC_PHASE_DELETING);

	ac_pace_init(&c.pace, archive_cluster_compaction_max_wal_rate, true,
				 ac_wait_event("ArchiveClusterCompactionPacing"));
	/* the loose pages' rows are deleted in place */
	ac_writeback_add(&c.pace.wb, c.arc);
	c.maxkeep = 64;
	c.keep = palloc(sizeof(BlockNumber) * c.maxkeep);
	/* ranges beyond this compaction's bound stay loose */
	for (i = nread; i < loose.nranges; i++)
	{
		BlockNumber b;

		for (b = loose.ranges[i].start; b < loose.ranges[i].end; b++)
			ac_keep_loose(&c, b);
	}
	keydesc = ac_sort_desc(c.arc, cfg->ncluster, cols);
	for (i = 0; i < cfg->ncluster; i++)
		sortcols[i] = i + 1;
	sortcols[cfg->ncluster] = cfg->ncluster + 1;
	ops[cfg->ncluster] = TIDLessOperator;
	colls[cfg->ncluster] = InvalidOid;
	nullsfirst[cfg->ncluster] = false;
	sort = tuplesort_begin_heap(keydesc, cfg->ncluster + 1, sortcols, ops, colls,
								nullsfirst, maintenance_work_mem, NULL, TUPLESORT_NONE);
	keyslot = MakeSingleTupleTableSlot(keydesc, &TTSOpsVirtual);
	fetchslot = table_slot_create(c.arc, NULL);
	for (i = 0; i < ntids; i++)
	{
		TM_FailureData tmfd;
		TM_Result	res;

		CHECK_FOR_INTERRUPTS();
		ac_pace(&c.pace);
		if ((i & 255) == 0)
			ac_progress_rows(i);
		res = ac_table_tuple_delete(c.arc, &tids[i], cid, snapshot, InvalidSnapshot,
									false, &tmfd, true);
		if (res != TM_Ok)
		{
			/* changed or locked meanwhile: it stays, its page loose (deleted: gone) */
			if (res != TM_Deleted)
			{
				c.busy++;
				ac_keep_loose(&c, ItemPointerGetBlockNumber(&tids[i]));
			}
			continue;
		}
		/* the version we just deleted is still there for us to read */
		if (!table_tuple_fetch_row_version(c.arc, &tids[i], SnapshotAny, fetchslot))
			elog(ERROR, "could not fetch deleted row (%u,%u)",
				 ItemPointerGetBlockNumber(&tids[i]), ItemPointerGetOffsetNumber(&tids[i]));
		ac_sort_put(sort, keyslot, fetchslot, cols, cfg->ncluster, &tids[i]);
		ExecClearTuple(fetchslot);
	}
	ExecDropSingleTupleTableSlot(fetchslot);
	ExecDropSingleTupleTableSlot(keyslot);
	ac_progress_rows(ntids);
	ac_pause_point("deleted", 2);
	ac_progress_phase(AC_PHASE_SORTING);
	tuplesort_performsort(sort);
	ac_progress_phase(AC_PHASE_WRITING);

	ac_writer_begin(&c.settled, c.arc, false, &c.pace);
	ac_writer_begin(&c.loose, c.arc, false, &c.pace);
	ac_writer_set_order(&c.settled, cfg->ncluster, cols, ops, colls);
	ac_writer_set_order(&c.loose, cfg->ncluster, cols, ops, colls);
	c.settled.cid = c.loose.cid = cid;
	/* a settled page holds one key's rows */
	c.settled.page_per_flush = true;
	c.rowslot = table_slot_create(c.arc, NULL);
	c.keyattno = cols[0];
	c.keysort.ssup_cxt = cxt;
	c.keysort.ssup_collation = colls[0];
	c.keysort.ssup_nulls_first = false;
	PrepareSortSupportFromOrderingOp(ops[0], &c.keysort);
	c.keycxt = AllocSetContextCreate(cxt, "archive_cluster compaction key",
									 ALLOCSET_SMALL_SIZES);
	ac_write_sorted(&c, sort, keydesc);
	tuplesort_end(sort);
	ac_writer_finish(&c.settled);
	ac_writer_finish(&c.loose);

	/* what stays loose: the ends of keys, rows left, rows that did not fit */
	for (i = 0; i < c.loose.nblocks; i++)
		ac_keep_loose(&c, c.loose.blocks[i]);
	ac_loose_replace(cfg->relation, c.keep, c.nkeep);

	rows = c.settled.rows + c.loose.rows;
	*bytes = c.settled.bytes + c.loose.bytes;
	*paced_us = c.pace.paced_us;
	ac_pace_report(&c.pace, pace);
	*busy = c.busy;
	ExecDropSingleTupleTableSlot(c.rowslot);
	ac_writer_end(&c.settled);
	ac_writer_end(&c.loose);
	UnregisterSnapshot(snapshot);
	table_close(c.arc, NoLock);
	CommandCounterIncrement();
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return rows;
}

/*
 * Compact one registered table's archive if it is due (with force, if it
 * has loose pages at all): take its run lock, then, as the table's owner,
 * measure, compact and record the compaction.  Errors propagate to the
 * caller.  In res: the status, rows and bytes rewritten, times.
 */
void
ac_compact_table(AcTableConfig *cfg, bool force, bool wait_replicas, const char *started_by,
				 AcRunResult *res)
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	Oid			owner;
	int64		busy = 0;
	int64		waited0 = ac_replica_waited_in_xact();
	char	   *relname;
	AcPaceReport pace;

	ac_progress_begin('c', cfg->relation, cfg->current, ac_is_background_worker());
	/* a call waits for lagging peers before it takes the table's locks, when due */
	if (wait_replicas && (relname = get_rel_name(cfg->relation)) != NULL)
	{
		int64		waited = 0;
		bool		due = force;

		if (!due)
		{
			ac_switch_to_owner(cfg->current, &save_userid, &save_sec_context, &save_nestlevel);
			due = ac_compactable_share(cfg) >= Max(archive_cluster_compaction_threshold, 0.001);
			ac_restore_user(save_userid, save_sec_context, save_nestlevel);
		}
		if (due && !ac_call_wait_for_replicas(relname, true, &waited))
		{
			memset(res, 0, sizeof(AcRunResult));
			res->finished = GetCurrentTimestamp();
			res->started = res->finished - waited;
			res->lagged = true;
			res->replica_us = res->paced_us = waited;
			res->status = AC_STATUS_LAGGED;
			ac_progress_end();
			return;
		}
	}
	if (ac_table_begin(cfg, res) == NULL)
	{
		ac_progress_end();
		return;
	}

	ac_switch_to_owner(cfg->current, &save_userid, &save_sec_context, &save_nestlevel);
	owner = GetUserId();
	if (!force && ac_compactable_share(cfg) < Max(archive_cluster_compaction_threshold, 0.001))
	{
		ac_restore_user(save_userid, save_sec_context, save_nestlevel);
		res->status = "not due";
		ac_progress_end();
		return;
	}
	ac_flush_as_written();
	res->rows = ac_compact_rows(cfg, &res->bytes, &res->paced_us, &pace, &busy);
	ac_restore_user(save_userid, save_sec_context, save_nestlevel);
	res->finished = GetCurrentTimestamp();
	res->batches = res->rows > 0 ? 1 : 0;
	res->status = res->rows > 0 ? "compacted" : "nothing to compact";
	res->replica_us = ac_replica_waited_in_xact() - waited0;
	res->paced_us += res->replica_us;

	if (res->rows > 0 || busy > 0)
	{
		AcRunLog	log;

		ac_run_log_of(&log, cfg->relation, AC_KIND_COMPACTION, res, started_by, owner);
		log.rows_busy = busy;
		log.detail = ac_pace_detail(&pace, res->replica_us, false);
		ac_log_run(&log);
	}
	ac_progress_end();
	ac_pause_point("before_commit", 3);
}

static void
ac_compact_work(AcTableConfig *cfg, void *arg, AcRunResult *res)
{
	ac_compact_table(cfg, *(bool *) arg, true, ac_caller(), res);
}

/*
 * archive_cluster_compact(relation regclass DEFAULT NULL, force boolean
 * DEFAULT false): compact the archive of one registered table, or of every
 * one the caller owns, that is due (archive_cluster.compaction_threshold);
 * with force, whatever the measure.  See ac_each_table() (table_job.c).
 */
Datum
archive_cluster_compact(PG_FUNCTION_ARGS)
{
	bool		force;

	if (PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("force must not be NULL")));
	force = PG_GETARG_BOOL(1);
	ac_each_table(fcinfo, AC_KIND_COMPACTION, ac_compact_work, &force);
	return (Datum) 0;
}
