/*-------------------------------------------------------------------------
 *
 * leaf_pass.c
 *		A pass over one closed leaf partition of a registered partitioned
 *		table: its rows rewritten in the order of its cluster index, each
 *		page's worth onto an empty page, in the caller's transaction and
 *		online.  archive_cluster_pass_leaf(leaf) and ac_pass_leaf().
 *
 *		Compaction's machinery (compact.c), inside one table: each row the
 *		index returns is deleted, marked as moved to another partition (as
 *		a cross-partition UPDATE marks it), and written again through the
 *		archive writer, which fills empty pages in cluster order.  So:
 *		- a snapshot taken before the pass commits sees the old versions,
 *		  one taken after it the new ones: every row exactly once;
 *		- a transaction that waited to update, delete or lock a moved row
 *		  (an UPDATE, SELECT FOR UPDATE, a foreign key's check) fails with
 *		  SQLSTATE 40001 and is retried, never misses it; a row another
 *		  transaction is changing or locking is left where it is (busy);
 *		- unique indexes hold: the new version's entry meets only the old
 *		  version this transaction deleted, and an ON CONFLICT that meets
 *		  the old one waits for this transaction, then finds the new one;
 *		- one transaction: a crash at any point leaves the leaf as it was.
 *
 *		Locks: ROW EXCLUSIVE on the leaf alone (when granted at once), none
 *		on the partitioned table, so that DDL on other leaves goes on.  A
 *		DROP or DETACH of this leaf, or an ATTACH of a DEFAULT partition
 *		beside it, waits for it, and so does an UPDATE or a foreign key's
 *		check of a row the pass moved (it waits for the pass's transaction):
 *		between pages the pass looks for a session waiting for a lock on the
 *		leaf or for its transaction and, if one does, stops there, its rows
 *		written; the caller commits, and the waiter waited for a page and a
 *		commit.  It records the first cluster column's value it
 *		stopped at (archive_cluster_leaves), and the next pass starts there.
 *
 *		Disk: the first pass writes every row onto new pages at the end of
 *		the file, so the leaf takes twice its size until VACUUM frees the
 *		pages it emptied.  Empty pages are taken from the start of the file
 *		first, so a pass after that VACUUM moves the rows into the front
 *		half, and the VACUUM after it truncates the rest.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/heapam.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/partition.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_operator_d.h"
#include "catalog/pg_type_d.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "storage/freespace.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplesort.h"

#include "compat.h"
#include "archive/archive_writer.h"
#include "archive/compact.h"
#include "archive/table_job.h"
#include "base/cluster_index.h"
#include "base/guc.h"
#include "base/lock_waiters.h"
#include "base/util.h"
#include "pace/pace.h"
#include "pace/progress.h"
#include "pace/replica_wait.h"
#include "partition/leaf_pass.h"
#include "partition/leaf_space.h"
#include "partition/resume_key.h"
#include "partition/leaves.h"
#include "registry/partitioned.h"
#include "registry/replication.h"

PG_FUNCTION_INFO_V1(archive_cluster_pass_leaf);

/*
 * Pages between two insertions of the index entries sorted so far (indexes
 * not in the cluster key's order): what a pass that gives way still has to
 * insert before it commits.
 */
#define AC_PASS_FINISH_PAGES 256

/* rows a tail pass collects between two looks for a reason to stop */
#define AC_TAIL_CHECK_ROWS 4096

/*
 * A pass's advisory lock on its leaf: 'ACPL' and the leaf's OID, in a key
 * space of its own (pg_advisory_lock() uses 1 and 2 in the tag's fourth
 * field).
 */
#define AC_PASS_LOCK_KEY 0x4143504C
#define AC_PASS_LOCK_SPACE 0x4143

/* Is another session waiting for a lock on one of these leaves? */
bool
ac_leaves_have_waiters(List *leaves)
{
	ListCell   *lc;

	foreach(lc, leaves)
	{
		if (ac_relation_has_waiters(lfirst_oid(lc)))
			return true;
	}
	return false;
}

/* What a pass refuses, once the leaf is locked. */
static void
ac_check_leaf(AcPartitionedConfig *cfg, Relation rel)
{
	Oid			leaf = RelationGetRelid(rel);
	const char *name = RelationGetRelationName(rel);
	List	   *ancestors;

	if (rel->rd_rel->relkind != RELKIND_RELATION || !rel->rd_rel->relispartition)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a leaf partition", name),
				 errhint("Pass a partition that holds rows, as archive_cluster_partitions() lists them.")));
	ancestors = get_partition_ancestors(leaf);
	if (!list_member_oid(ancestors, cfg->relation))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("\"%s\" is not a partition of \"%s\"", name, get_rel_name(cfg->relation))));
	if (rel->rd_rel->relam != HEAP_TABLE_AM_OID)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot cluster partition \"%s\": its access method is not heap", name)));
	if (rel->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot cluster partition \"%s\": it is not a permanent table", name)));
	if (rel->rd_rel->relowner != ac_relation_owner(cfg->relation))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot cluster partition \"%s\": its owner is not the owner of \"%s\"",
						name, get_rel_name(cfg->relation)),
				 errdetail("Passes run as the partitioned table's owner."),
				 errhint("Give the partition to that role with ALTER TABLE ... OWNER TO.")));
	if (ac_leaf_closed(cfg, leaf, true) == AC_OPEN)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("partition \"%s\" is not closed", name),
				 errdetail("Its bound, a parent's bound or its newest row must be older than the hot window (%s).",
						   DatumGetCString(DirectFunctionCall1(interval_out,
															   IntervalPGetDatum(&cfg->hot_window)))),
				 errhint("Rows newer than that are still being written; a pass waits until the partition is closed.")));
	/* a published leaf needs a replica identity for the deletes, as DELETE does */
	CheckCmdReplicaIdentity(rel, CMD_DELETE);
	ac_refuse_leaf_moves_lost(leaf, cfg->relation);
	ac_check_immediate_unique(rel, "Make the constraint NOT DEFERRABLE.");
}

/* A pass under way, as its loops share it. */
typedef struct AcPassRun
{
	Relation	rel;
	AcWriter	w;
	Snapshot	snapshot;
	List	   *locked;			/* leaves this transaction holds: the pass's too */
	TimestampTz deadline;
	int64		written;		/* w.rows at the last page */
	int			pages_unfinished;	/* since the last ac_writer_finish() */
	/* the cluster index's comparison of each key column, and its collation */
	FmgrInfo	cmp[AC_MAX_CLUSTER_COLS];
	Oid			colls[AC_MAX_CLUSTER_COLS];
	AcLeafPass *pass;
} AcPassRun;

/*
 * Is the pass to stop: a session waits for a leaf this transaction holds or
 * for this transaction, the deadline passed, or a standby or subscriber
 * lags?
 */
static bool
ac_pass_should_stop(AcPassRun *r)
{
	int64		lag;
	int			pid;

	return ac_leaves_have_waiters(r->locked) || ac_xact_has_waiters() ||
		(r->deadline != 0 && GetCurrentTimestamp() >= r->deadline) ||
		ac_replicas_lag_over(&lag, &pid);
}

/*
 * Move the row in slot (read with r->snapshot): delete it, marked as moved,
 * and hand it to the writer.  True when the pass stops after it: a page was
 * written and a session waits for a leaf this transaction holds or for
 * this transaction, the deadline passed, or a standby or subscriber lags.
 */
static bool
ac_pass_move(AcPassRun *r, TupleTableSlot *slot)
{
	TM_FailureData tmfd;
	TM_Result	res;

	CHECK_FOR_INTERRUPTS();
	ac_pace(r->w.pace);
	res = ac_table_tuple_delete(r->rel, &slot->tts_tid, r->w.cid, r->snapshot, InvalidSnapshot,
								false, &tmfd, true);
	if (res != TM_Ok)
	{
		/* changed or locked meanwhile: it stays (deleted: gone) */
		if (res != TM_Deleted)
			r->pass->busy++;
		return false;
	}
	ExecCopySlot(ac_writer_slot(&r->w), slot);
	ac_writer_add(&r->w);
	if (r->w.rows == r->written)
		return false;
	/* a page was written */
	r->written = r->w.rows;
	ac_progress_rows(r->written);
	/* the index entries sorted so far, so that stopping costs little */
	if (++r->pages_unfinished >= AC_PASS_FINISH_PAGES)
	{
		ac_writer_finish(&r->w);
		r->pages_unfinished = 0;
	}
	ac_pause_point("leaf_page", 7);
	return ac_pass_should_stop(r);
}

/*
 * Has the row in slot another cluster key than the one in key[], as the
 * cluster index compares them (equal keys may differ in their bytes: 1.0
 * and 1.00, a nondeterministic collation's 'a' and 'A')?
 */
static bool
ac_key_differs(AcPassRun *r, const AttrNumber *attnos, int n, const Datum *key,
			   TupleTableSlot *slot)
{
	int			i;

	for (i = 0; i < n; i++)
	{
		bool		isnull;
		Datum		value = slot_getattr(slot, attnos[i], &isnull);

		/* cluster columns are NOT NULL (registration checks it) */
		if (isnull ||
			DatumGetInt32(FunctionCall2Coll(&r->cmp[i], r->colls[i], value, key[i])) != 0)
			return true;
	}
	return false;
}

/*
 * A whole pass: the rows in the cluster index's order, from resume (if
 * nkeys) on.  When it is to stop, it goes on to the end of the cluster key
 * it is in (the rows of one key are then moved by one pass, and the next
 * one, starting at the key it stopped at, moves none of them again), and
 * returns that next key, the resume point.
 */
static bytea *
ac_pass_index(AcPassRun *r, Relation index, const AttrNumber *attnos, int n,
			  ScanKey key, int nkeys)
{
	IndexScanDesc scan = ac_index_beginscan(r->rel, index, r->snapshot, nkeys, 0);
	TupleTableSlot *slot = table_slot_create(r->rel, NULL);
	bytea	   *stopped_at = NULL;
	bool		stopping = false;
	Datum		last[AC_MAX_CLUSTER_COLS];
	int			i;

	index_rescan(scan, nkeys > 0 ? key : NULL, nkeys, NULL, 0);
	while (index_getnext_slot(scan, ForwardScanDirection, slot))
	{
		if (stopping && ac_key_differs(r, attnos, n, last, slot))
		{
			stopped_at = ac_resume_encode(r->rel, attnos, n, slot);
			break;
		}
		if (ac_pass_move(r, slot) && !stopping)
		{
			/* the key of the row just moved, to stop after its last row */
			stopping = true;
			r->pass->gave_way = true;
			for (i = 0; i < n; i++)
			{
				Form_pg_attribute att = TupleDescAttr(RelationGetDescr(r->rel), attnos[i] - 1);
				bool		isnull;

				last[i] = datumCopy(slot_getattr(slot, attnos[i], &isnull), att->attbyval, att->attlen);
			}
		}
	}
	/* it was to stop in the leaf's last key: it went through to the end */
	if (stopping && stopped_at == NULL)
		r->pass->gave_way = false;
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	return stopped_at;
}

/*
 * A tail pass: the rows on pages from tail on, sorted by the cluster key
 * (and TID), as a compaction sorts them, onto the empty pages below tail.
 * A pass that stops leaves the rest for the next one, which measures the
 * tail again.
 */
static void
ac_pass_tail(AcPassRun *r, BlockNumber tail, const AttrNumber *attnos, const Oid *ops,
			 const Oid *colls, int n)
{
	TupleDesc	keydesc = ac_sort_desc(r->rel, n, attnos);
	AttrNumber	sortcols[AC_MAX_CLUSTER_COLS + 1];
	Oid			sortops[AC_MAX_CLUSTER_COLS + 1];
	Oid			sortcolls[AC_MAX_CLUSTER_COLS + 1];
	bool		nullsfirst[AC_MAX_CLUSTER_COLS + 1];
	Tuplesortstate *sort;
	TupleTableSlot *keyslot = MakeSingleTupleTableSlot(keydesc, &TTSOpsVirtual);
	TupleTableSlot *sortslot = MakeSingleTupleTableSlot(keydesc, &TTSOpsMinimalTuple);
	TupleTableSlot *slot = table_slot_create(r->rel, NULL);
	ItemPointerData mintid;
	ItemPointerData maxtid;
	TableScanDesc scan;
	int64		collected = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		sortcols[i] = i + 1;
		sortops[i] = ops[i];
		sortcolls[i] = colls[i];
		nullsfirst[i] = false;
	}
	sortcols[n] = n + 1;
	sortops[n] = TIDLessOperator;
	sortcolls[n] = InvalidOid;
	nullsfirst[n] = false;
	sort = tuplesort_begin_heap(keydesc, n + 1, sortcols, sortops, sortcolls, nullsfirst,
								maintenance_work_mem, NULL, TUPLESORT_NONE);
	ItemPointerSet(&mintid, tail, FirstOffsetNumber);
	ItemPointerSet(&maxtid, MaxBlockNumber, MaxOffsetNumber);
	scan = ac_table_beginscan_tidrange(r->rel, r->snapshot, &mintid, &maxtid);
	while (table_scan_getnextslot_tidrange(scan, ForwardScanDirection, slot))
	{
		CHECK_FOR_INTERRUPTS();
		ac_sort_put(sort, keyslot, slot, attnos, n, &slot->tts_tid);
		/* nothing moved yet: a session waiting for the leaf need not wait for the sort */
		if (++collected % AC_TAIL_CHECK_ROWS == 0 && ac_pass_should_stop(r))
		{
			r->pass->gave_way = true;
			break;
		}
	}
	table_endscan(scan);
	if (!r->pass->gave_way)
		tuplesort_performsort(sort);
	while (!r->pass->gave_way && tuplesort_gettupleslot(sort, true, false, sortslot, NULL))
	{
		bool		isnull;
		ItemPointerData tid = *(ItemPointer) DatumGetPointer(slot_getattr(sortslot, n + 1, &isnull));

		if (!table_tuple_fetch_row_version(r->rel, &tid, r->snapshot, slot))
			continue;			/* gone since the scan: deleted by a commit we see */
		if (ac_pass_move(r, slot))
		{
			r->pass->gave_way = true;
			break;
		}
	}
	tuplesort_end(sort);
	ExecDropSingleTupleTableSlot(slot);
	ExecDropSingleTupleTableSlot(sortslot);
	ExecDropSingleTupleTableSlot(keyslot);
}

/*
 * One pass over leaf, a leaf partition of cfg's partitioned table, in the
 * caller's transaction, as the partitioned table's owner: a whole pass in
 * the cluster index's order (tail: InvalidBlockNumber), from where the last
 * one stopped, or a tail pass over the pages from tail on.  Errors out if
 * the leaf is not closed or cannot be passed; gives way at once (nothing
 * done) if its lock is not granted at once, another pass is on it, or
 * someone waits for the leaves in held or for this transaction; then
 * between pages for the same, or at deadline (0: none).
 */
void
ac_pass_leaf(AcPartitionedConfig *cfg, Oid leaf, List *held, BlockNumber tail,
			 TimestampTz deadline, AcLeafPass *pass)
{
	MemoryContext cxt;
	MemoryContext oldcxt;
	Relation	rel;
	Relation	index;
	Oid			indexid;
	AcLeafState st;
	AcPace		pace;
	AcPassRun	r;
	ScanKeyData key;
	ScanKeyData members[AC_MAX_CLUSTER_COLS];
	int			nkeys = 0;
	Datum		resume[AC_MAX_CLUSTER_COLS];
	AttrNumber	attnos[AC_MAX_CLUSTER_COLS];
	Oid			ops[AC_MAX_CLUSTER_COLS];
	Oid			colls[AC_MAX_CLUSTER_COLS];
	bytea	   *stopped_at = NULL;
	AcPaceReport report;
	List	   *locked;
	LOCKTAG		tag;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	int			i;

	memset(pass, 0, sizeof(*pass));
	pass->tail = tail != InvalidBlockNumber;
	PreventCommandIfReadOnly("archive_cluster_pass_leaf()");
	PreventCommandIfParallelMode("archive_cluster_pass_leaf()");
	if (!ConditionalLockRelationOid(leaf, RowExclusiveLock))
	{
		pass->gave_way = true;
		return;
	}
	/* dropped since the caller looked: nothing to do */
	rel = try_table_open(leaf, NoLock);
	if (rel == NULL)
	{
		UnlockRelationOid(leaf, RowExclusiveLock);
		return;
	}
	/* one pass at a time on a leaf (ROW EXCLUSIVE does not conflict with itself) */
	SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, AC_PASS_LOCK_KEY, leaf, AC_PASS_LOCK_SPACE);
	if (LockAcquire(&tag, ExclusiveLock, false, true) == LOCKACQUIRE_NOT_AVAIL)
	{
		table_close(rel, RowExclusiveLock);
		pass->gave_way = true;
		return;
	}
	locked = lappend_oid(list_copy(held), leaf);
	if (ac_leaves_have_waiters(locked) || ac_xact_has_waiters())
	{
		LockRelease(&tag, ExclusiveLock, false);
		table_close(rel, RowExclusiveLock);
		pass->gave_way = true;
		return;
	}
	ac_check_leaf(cfg, rel);
	indexid = ac_cluster_index(rel, cfg->cluster_by, cfg->ncluster);
	if (!OidIsValid(indexid))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("partition \"%s\" has no valid btree index in the order of cluster_by",
						RelationGetRelationName(rel)),
				 errhint("The partitioned table's index is missing on it; attach or create it.")));

	cxt = AllocSetContextCreate(CurrentMemoryContext, "archive_cluster leaf pass",
								ALLOCSET_DEFAULT_SIZES);
	oldcxt = MemoryContextSwitchTo(cxt);
	ac_leaf_state(leaf, &st);
	ac_switch_to_owner(cfg->relation, &save_userid, &save_sec_context, &save_nestlevel);
	ac_flush_as_written();
	ac_progress_begin('p', cfg->relation, leaf, ac_is_background_worker());
	index = index_open(indexid, RowExclusiveLock);
	/* the index's order (its operator class and collation), which a tail pass sorts by too */
	for (i = 0; i < cfg->ncluster; i++)
	{
		attnos[i] = index->rd_index->indkey.values[i];
		ops[i] = get_opfamily_member(index->rd_opfamily[i], index->rd_opcintype[i],
									 index->rd_opcintype[i], BTLessStrategyNumber);
		if (!OidIsValid(ops[i]))
			elog(ERROR, "missing operator %d(%u,%u) in opfamily %u", BTLessStrategyNumber,
				 index->rd_opcintype[i], index->rd_opcintype[i], index->rd_opfamily[i]);
		colls[i] = index->rd_indcollation[i];
	}
	if (!pass->tail && ac_resume_decode(st.resume_at, rel, attnos, cfg->ncluster, resume) &&
		ac_resume_keys(index, cfg->ncluster, resume, &key, members))
	{
		nkeys = 1;
		pass->resumed = true;
	}

	ac_pace_init(&pace, archive_cluster_compaction_max_wal_rate, true,
				 ac_wait_event("ArchiveClusterPartitionPacing"));
	/* a lagging standby or subscriber stops the pass, no wait holding the leaf */
	pace.no_replica_wait = true;
	ac_writeback_add(&pace.wb, rel);
	memset(&r, 0, sizeof(r));
	r.rel = rel;
	r.locked = locked;
	r.deadline = deadline;
	r.pass = pass;
	for (i = 0; i < cfg->ncluster; i++)
	{
		fmgr_info(get_opfamily_proc(index->rd_opfamily[i], index->rd_opcintype[i],
									index->rd_opcintype[i], BTORDER_PROC), &r.cmp[i]);
		r.colls[i] = colls[i];
	}
	ac_writer_begin(&r.w, rel, false, &pace);
	ac_writer_set_order(&r.w, cfg->ncluster, attnos, ops, colls);
	/* a tail pass writes below the tail only */
	ac_writer_lowest_first(&r.w, tail);

	/* the deletes and the writes in one command: the scans see neither */
	r.snapshot = RegisterSnapshot(GetTransactionSnapshot());
	ac_progress_phase(AC_PHASE_WRITING);
	if (pass->tail)
	{
		ac_pass_tail(&r, tail, attnos, ops, colls, cfg->ncluster);
		if (pass->gave_way)
			stopped_at = ac_resume_tail_mark();
	}
	else
		stopped_at = ac_pass_index(&r, index, attnos, cfg->ncluster, &key, nkeys);
	(void) ac_writer_flush(&r.w);
	ac_writer_finish(&r.w);
	UnregisterSnapshot(r.snapshot);
	pass->rows = r.w.rows;
	pass->pages = r.w.nblocks;
	pass->bytes = r.w.bytes;
	pass->to_front = r.w.nblocks > 0 && r.w.blocks[0] < r.w.lowest_end;
	pass->paced_us = pace.paced_us;
	ac_pace_report(&pace, &report);
	ac_writer_end(&r.w);
	index_close(index, NoLock);
	ac_progress_end();
	ac_restore_user(save_userid, save_sec_context, save_nestlevel);

	MemoryContextSwitchTo(oldcxt);
	pass->detail = ac_pace_detail(&report, 0, false);
	/* one that stopped leaves where it stopped (a tail pass: a mark) */
	ac_leaf_record(cfg->relation, leaf, pass->rows, !pass->gave_way,
				   RelationGetNumberOfBlocks(rel), stopped_at);
	MemoryContextDelete(cxt);
	table_close(rel, NoLock);
	CommandCounterIncrement();
}

/*
 * archive_cluster_pass_leaf(leaf regclass): one pass over a closed leaf
 * partition of a registered partitioned table the caller owns.
 */
Datum
archive_cluster_pass_leaf(PG_FUNCTION_ARGS)
{
	Oid			leaf = PG_GETARG_OID(0);
	AcPartitionedConfig cfg;
	AcLeafPass	pass;
	TupleDesc	desc;
	Datum		values[6];
	bool		nulls[6] = {0};
	List	   *ancestors;
	ListCell   *lc;
	bool		found = false;

	ac_check_relation_exists(leaf);
	ac_check_owner(leaf);
	ancestors = get_partition_ancestors(leaf);
	foreach(lc, ancestors)
	{
		if (ac_load_partitioned(lfirst_oid(lc), &cfg))
		{
			found = true;
			break;
		}
	}
	if (!found)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("\"%s\" is not a partition of a registered partitioned table",
						get_rel_name(leaf)),
				 errhint("Register the partitioned table with archive_cluster_register(..., mode => 'partitioned').")));
	ac_check_owner(cfg.relation);
	ac_pass_leaf(&cfg, leaf, NIL, InvalidBlockNumber, 0, &pass);

	if (get_call_result_type(fcinfo, NULL, &desc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	values[0] = Int64GetDatum(pass.rows);
	values[1] = Int64GetDatum(pass.busy);
	values[2] = Int64GetDatum(pass.pages);
	values[3] = BoolGetDatum(pass.gave_way);
	values[4] = BoolGetDatum(pass.to_front);
	values[5] = BoolGetDatum(pass.resumed);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(BlessTupleDesc(desc), values, nulls)));
}
