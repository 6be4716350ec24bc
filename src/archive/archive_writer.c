/*-------------------------------------------------------------------------
 *
 * archive_writer.c
 *		Writing rows into <t>_archive, for runs (mover.c) and compactions
 *		(compact.c): rows come sorted by the cluster key; they are buffered
 *		a page's worth at a time and handed to table_multi_insert() onto an
 *		empty page (ac_writer_flush): one the free space map knows to be
 *		empty (a compaction emptied it, VACUUM freed it), else a new one.
 *		So the archive reuses the space compactions free, and no row of a
 *		later key goes into a hole among earlier keys' rows.  An index whose
 *		key columns are the cluster key's leading columns gets its entries
 *		as the rows go in, which is in its order; the others' entries are
 *		sorted per index and inserted in index order (ac_writer_finish).
 *		The pages written are noted, for the loose set
 *		(loose.c).  Each row and index entry is paced (pace.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/hio.h"
#include "access/htup_details.h"
#include "access/tableam.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/freespace.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/tuplesort.h"

#include "archive/archive_writer.h"
#include "compat.h"
#include "table/guard_indexes.h"

/*
 * Index entries of a batch.  With only btree indexes (no exclusion or
 * deferred constraints), they go into each index in its order: each index is
 * then walked from left to right, and an index whose key grows with time (an
 * id, a timestamp) gets its entries appended at its rightmost page, where
 * btree inserts take a fast path.  Those of an index on the cluster key's
 * leading columns come in that order already and go in as the rows do (no
 * sort, so the other sorts get its memory); the others are sorted per index
 * (ac_writer_finish).  Otherwise they are inserted row by row as an INSERT
 * would.
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

/*
 * Bytes a heap page of rel offers to rows: the page less its header, and
 * less the free space its fill factor keeps.
 */
static Size
ac_page_space(Relation rel)
{
	return BLCKSZ - SizeOfPageHeaderData -
		RelationGetTargetPageFreeSpace(rel, HEAP_DEFAULT_FILLFACTOR);
}

/*
 * Start writing into rel (a tier, opened by the caller) in the caller's
 * transaction and memory context.  "speculative": its unique indexes are
 * opened as for ON CONFLICT (careful runs probe them).  Guard indexes (table
 * mode) are left out: rows written here keep their keys.
 */
void
ac_writer_begin(AcWriter *w, Relation rel, bool speculative, AcPace *pace)
{
	int			i;

	memset(w, 0, sizeof(AcWriter));
	w->rel = rel;
	w->pace = pace;
	w->cid = GetCurrentCommandId(true);
	w->estate = CreateExecutorState();
	w->rri = makeNode(ResultRelInfo);
	InitResultRelInfo(w->rri, rel, 0, NULL, 0);
	ExecOpenIndices(w->rri, speculative);
	ac_guard_leave_out(w->rri);
	/* the heap goes through the ring below; its indexes do not */
	for (i = 0; i < w->rri->ri_NumIndices; i++)
		ac_writeback_add(&pace->wb, w->rri->ri_IndexRelationDescs[i]);
	w->sorted_indexes = ac_can_sort_indexes(w->rri);
	w->isorts = palloc0(sizeof(Tuplesortstate *) * Max(w->rri->ri_NumIndices, 1));
	w->predicates = palloc0(sizeof(ExprState *) * Max(w->rri->ri_NumIndices, 1));
	w->bistate = GetBulkInsertState();
	w->page_space = ac_page_space(rel);
	w->page = InvalidBlockNumber;
	for (i = 0; i < AC_PAGE_SLOTS; i++)
		w->slots[i] = table_slot_create(rel, NULL);
	w->maxblocks = 1024;
	w->blocks = palloc(sizeof(BlockNumber) * w->maxblocks);
	w->flushcxt = AllocSetContextCreate(CurrentMemoryContext, "archive_cluster writer",
										ALLOCSET_DEFAULT_SIZES);
}

/* The slot to fill with the next row; then call ac_writer_add(). */
TupleTableSlot *
ac_writer_slot(AcWriter *w)
{
	return w->slots[w->nslots];
}

/* Bytes the row in slot takes on a heap page: aligned, with its line pointer. */
static Size
ac_row_space(TupleTableSlot *slot)
{
	return MAXALIGN(ExecFetchSlotHeapTuple(slot, true, NULL)->t_len) + sizeof(ItemIdData);
}

/* Does a row of "space" bytes fit on the page after the buffered rows? */
static bool
ac_fits(AcWriter *w, Size space)
{
	if (w->nslots == 0 && w->page == InvalidBlockNumber)
		return true;
	return w->used + space <= w->page_space &&
		w->page_rows + w->nslots < MaxHeapTuplesPerPage;
}

/* Does the row in slot fit on the page after the buffered rows? */
bool
ac_writer_fits(AcWriter *w, TupleTableSlot *slot)
{
	return ac_fits(w, ac_row_space(slot));
}

/*
 * Rows come sorted by these columns of rel (the cluster key, as the caller
 * sorted it: "<" operators, collations, NULLS LAST).
 */
void
ac_writer_set_order(AcWriter *w, int ncols, const AttrNumber *attnos, const Oid *ltops,
					const Oid *collations)
{
	Assert(ncols <= AC_MAX_CLUSTER_COLS);
	w->norder = ncols;
	memcpy(w->order_attnos, attnos, sizeof(AttrNumber) * ncols);
	memcpy(w->order_ops, ltops, sizeof(Oid) * ncols);
	memcpy(w->order_colls, collations, sizeof(Oid) * ncols);
}

/*
 * Do index i's entries come in its order: are its key columns (or the
 * cluster key's, when the index has more) the cluster key's leading
 * columns, in the same order, ascending, nulls last?
 */
static bool
ac_index_in_order(AcWriter *w, int i)
{
	Relation	index = w->rri->ri_IndexRelationDescs[i];
	IndexInfo  *ii = w->rri->ri_IndexRelationInfo[i];
	int			ncols = Min(ii->ii_NumIndexKeyAttrs, w->norder);
	int			k;

	if (ncols == 0)
		return false;
	for (k = 0; k < ncols; k++)
	{
		/* an expression's attno is 0, never a cluster column */
		if (ii->ii_IndexAttrNumbers[k] != w->order_attnos[k] ||
			index->rd_indoption[k] != 0 ||	/* DESC, NULLS FIRST */
			index->rd_indcollation[k] != w->order_colls[k] ||
			get_op_opfamily_strategy(w->order_ops[k], index->rd_opfamily[k]) != BTLessStrategyNumber)
			return false;
	}
	return true;
}

/* A sort for each index but those whose entries come in order (NULL). */
static void
ac_index_sorts_begin(AcWriter *w)
{
	int			n = w->rri->ri_NumIndices;
	bool	   *inorder = palloc(sizeof(bool) * Max(n, 1));
	int			nsorts = 0;
	int			workmem;
	int			i;

	for (i = 0; i < n; i++)
	{
		inorder[i] = ac_index_in_order(w, i);
		if (!inorder[i])
			nsorts++;
	}
	workmem = Max(maintenance_work_mem / Max(nsorts, 1), 1024);
	for (i = 0; i < n; i++)
		w->isorts[i] = inorder[i] ? NULL :
			tuplesort_begin_index_btree(w->rel, w->rri->ri_IndexRelationDescs[i],
										false, false, workmem, NULL, TUPLESORT_NONE);
	pfree(inorder);
	w->sorts_begun = true;
}

/* The index entries of one written row: into the sorts, or into the index. */
static void
ac_index_entries_add(AcWriter *w, TupleTableSlot *slot)
{
	ExprContext *econtext = GetPerTupleExprContext(w->estate);
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	int			i;

	econtext->ecxt_scantuple = slot;
	for (i = 0; i < w->rri->ri_NumIndices; i++)
	{
		IndexInfo  *ii = w->rri->ri_IndexRelationInfo[i];
		Relation	index = w->rri->ri_IndexRelationDescs[i];

		/* being built by CREATE INDEX CONCURRENTLY: not yet, as INSERT does */
		if (!ii->ii_ReadyForInserts)
			continue;
		if (ii->ii_Predicate != NIL)
		{
			if (w->predicates[i] == NULL)
				w->predicates[i] = ExecPrepareQual(ii->ii_Predicate, w->estate);
			if (!ExecQual(w->predicates[i], econtext))
				continue;
		}
		FormIndexDatum(ii, slot, w->estate, values, isnull);
		if (w->isorts[i] != NULL)
			tuplesort_putindextuplevalues(w->isorts[i], index, &slot->tts_tid, values, isnull);
		else
		{
			ac_pace(w->pace);
			index_insert(index, values, isnull, &slot->tts_tid, w->rel,
						 index->rd_index->indisunique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO,
						 false, ii);
		}
	}
}

/*
 * The slot from ac_writer_slot() is filled: buffer its row, after writing
 * the buffered rows onto a page of their own if it does not fit with them.
 */
void
ac_writer_add(AcWriter *w)
{
	TupleTableSlot *slot = w->slots[w->nslots];
	Size		space = ac_row_space(slot);

	ac_pace(w->pace);
	if (!ac_fits(w, space))
	{
		int			n = w->nslots;

		(void) ac_writer_flush(w);
		/* the row starts the next page */
		w->slots[n] = w->slots[0];
		w->slots[0] = slot;
	}
	w->nslots++;
	w->used += space;
}

/* Forget the buffered rows (the caller wrote them elsewhere). */
void
ac_writer_clear(AcWriter *w)
{
	int			i;

	for (i = 0; i < w->nslots; i++)
		ExecClearTuple(w->slots[i]);
	w->nslots = 0;
	w->used = 0;
	w->page = InvalidBlockNumber;
	w->page_rows = 0;
}

/* Note a page rows went to (consecutive rows mostly share one). */
static void
ac_note_block(AcWriter *w, BlockNumber blk)
{
	if (w->nblocks > 0 && w->blocks[w->nblocks - 1] == blk)
		return;
	if (w->nblocks == w->maxblocks)
	{
		w->maxblocks *= 2;
		w->blocks = repalloc_huge(w->blocks, sizeof(BlockNumber) * w->maxblocks);
	}
	w->blocks[w->nblocks++] = blk;
}

/*
 * Insert the buffered rows starting on page blk, then their index entries
 * (or sort them).  The free space map is skipped: a row that does not fit
 * on blk after all goes onto a new page at the end of the table, never into
 * a hole among earlier keys' rows.  True if the first row went onto blk.
 */
static bool
ac_writer_insert(AcWriter *w, BlockNumber blk)
{
	MemoryContext oldcxt;
	bool		landed;
	int			i;

	if (w->sorted_indexes && w->rri->ri_NumIndices > 0 && !w->sorts_begun)
		ac_index_sorts_begin(w);
	for (i = 0; i < w->nslots; i++)
		w->bytes += ExecFetchSlotHeapTuple(w->slots[i], true, NULL)->t_len;
	w->rows += w->nslots;
	/* what it allocates (its array of tuples, TOASTed copies) is not freed by it */
	oldcxt = MemoryContextSwitchTo(w->flushcxt);
	ReleaseBulkInsertStatePin(w->bistate);
	RelationSetTargetBlock(w->rel, blk);
	table_multi_insert(w->rel, w->slots, w->nslots, w->cid, TABLE_INSERT_SKIP_FSM, w->bistate);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(w->flushcxt);
	landed = ItemPointerGetBlockNumber(&w->slots[0]->tts_tid) == blk;
	for (i = 0; i < w->nslots; i++)
	{
		ac_note_block(w, ItemPointerGetBlockNumber(&w->slots[i]->tts_tid));
		if (w->rri->ri_NumIndices > 0 && w->sorted_indexes)
			ac_index_entries_add(w, w->slots[i]);
		else if (w->rri->ri_NumIndices > 0)
		{
			List	   *recheck = ac_insert_index_tuples(w->rri, w->slots[i], w->estate);

			if (recheck != NIL)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("deferrable unique constraints on \"%s\" are not supported",
								RelationGetRelationName(w->rel))));
		}
		ExecClearTuple(w->slots[i]);
		ResetPerTupleExprContext(w->estate);
	}
	w->nslots = 0;
	return landed;
}

/* The free space of page blk, as the heap counts it, and its rows. */
static Size
ac_page_free(AcWriter *w, BlockNumber blk, int *rows)
{
	Buffer		buf = ReadBufferExtended(w->rel, MAIN_FORKNUM, blk, RBM_NORMAL,
										 w->bistate->strategy);
	Page		page;
	Size		free;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	if (PageIsNew(page))
	{
		free = BLCKSZ - SizeOfPageHeaderData - sizeof(ItemIdData);
		*rows = 0;
	}
	else
	{
		free = PageGetHeapFreeSpace(page);
		*rows = PageGetMaxOffsetNumber(page);
	}
	UnlockReleaseBuffer(buf);
	return free;
}

/*
 * Take empty pages from the start of the file, in order, rather than where
 * the free space map points: a pass over a leaf partition moves its rows
 * towards the start, so that VACUUM can truncate the end it left empty
 * (partition/leaf_pass.c).  Only pages below end are looked at (Invalid:
 * the file's end now; pages added since are the writer's own).
 */
void
ac_writer_lowest_first(AcWriter *w, BlockNumber end)
{
	w->lowest_first = true;
	w->lowest_next = 0;
	w->lowest_end = end != InvalidBlockNumber ? end : RelationGetNumberOfBlocks(w->rel);
}

/* The next page below lowest_end that the free space map knows to be empty. */
static BlockNumber
ac_lowest_empty_page(AcWriter *w)
{
	while (w->lowest_next < w->lowest_end)
	{
		BlockNumber blk = w->lowest_next++;

		CHECK_FOR_INTERRUPTS();
		if (GetRecordedFreeSpace(w->rel, blk) >= MaxHeapTupleSize)
			return blk;
	}
	return InvalidBlockNumber;
}

/*
 * Write the buffered rows (at most a page's worth: ac_writer_add) onto an
 * empty page: one the free space map knows to be empty, else a new page
 * added to the table; or onto the page the last flush left with room.
 * Then record the page's free space as it is: rows the heap stored smaller
 * than estimated (TOASTed by the archive's own settings) leave room, which
 * the next flush fills (unless w->page_per_flush), and another session may
 * have written there too.  Returns the page, or InvalidBlockNumber when
 * nothing was buffered or the rows went elsewhere (another session took the
 * page first: the free space map is a hint, nothing reserves a page).
 */
BlockNumber
ac_writer_flush(AcWriter *w)
{
	BlockNumber blk = w->page;
	bool		landed;
	Size		free;
	int			rows;

	w->page = InvalidBlockNumber;
	w->page_rows = 0;
	w->used = 0;
	if (w->nslots == 0)
		return InvalidBlockNumber;
	if (blk == InvalidBlockNumber && w->lowest_first)
		blk = ac_lowest_empty_page(w);
	if (blk == InvalidBlockNumber)
	{
		/* only a page with nothing on it is in the top category */
		if (!w->lowest_first)
			blk = GetPageWithFreeSpace(w->rel, MaxHeapTupleSize);
		if (blk == InvalidBlockNumber)
			blk = ac_extend_by_one_page(w->rel, w->bistate->strategy);
	}
	landed = ac_writer_insert(w, blk);
	free = ac_page_free(w, blk, &rows);
	RecordPageWithFreeSpace(w->rel, blk, free);
	if (!landed)
		return InvalidBlockNumber;
	if (!w->page_per_flush && free >= w->page_space / 4)
	{
		w->page = blk;
		w->page_rows = rows;
		w->used = BLCKSZ - SizeOfPageHeaderData - sizeof(ItemIdData) - free;
	}
	return blk;
}

/* Insert the sorted entries of each index; unique indexes are checked. */
void
ac_writer_finish(AcWriter *w)
{
	int			i;

	if (!w->sorts_begun)
		return;
	w->sorts_begun = false;
	elog(DEBUG1, "archive_cluster: inserting the sorted index entries of %lld rows",
		 (long long) w->rows);
	for (i = 0; i < w->rri->ri_NumIndices; i++)
	{
		Relation	index = w->rri->ri_IndexRelationDescs[i];
		IndexInfo  *ii = w->rri->ri_IndexRelationInfo[i];
		TupleDesc	desc = RelationGetDescr(index);
		IndexTuple	itup;
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];

		if (w->isorts[i] == NULL)
			continue;
		tuplesort_performsort(w->isorts[i]);
		while ((itup = tuplesort_getindextuple(w->isorts[i], true)) != NULL)
		{
			CHECK_FOR_INTERRUPTS();
			ac_pace(w->pace);
			index_deform_tuple(itup, desc, values, isnull);
			index_insert(index, values, isnull, &itup->t_tid, w->rel,
						 index->rd_index->indisunique ? UNIQUE_CHECK_YES : UNIQUE_CHECK_NO,
						 false, ii);
		}
		tuplesort_end(w->isorts[i]);
		w->isorts[i] = NULL;
	}
}

void
ac_writer_end(AcWriter *w)
{
	int			i;

	for (i = 0; i < AC_PAGE_SLOTS; i++)
		ExecDropSingleTupleTableSlot(w->slots[i]);
	FreeBulkInsertState(w->bistate);
	table_finish_bulk_insert(w->rel, 0);
	/* this backend's next insert into the table picks its page afresh */
	RelationSetTargetBlock(w->rel, InvalidBlockNumber);
	for (i = 0; i < w->rri->ri_NumIndices; i++)
		ac_writeback_forget(&w->pace->wb, w->rri->ri_IndexRelationDescs[i]);
	ExecCloseIndices(w->rri);
	FreeExecutorState(w->estate);
	pfree(w->blocks);
	MemoryContextDelete(w->flushcxt);
	pfree(w->isorts);
	pfree(w->predicates);
}
