/*-------------------------------------------------------------------------
 *
 * leaf_space.c
 *		Where a leaf partition's rows lie in its file, as the free space map
 *		knows it (after VACUUM).  A pass writes rows onto empty pages only:
 *		the first one onto new pages at the end of the file, which doubles
 *		it until VACUUM frees the pages it emptied; after that VACUUM the
 *		rows are all in the back half, after a run of empty pages, and
 *		VACUUM cannot truncate the file.  A tail pass (leaf_pass.c) then
 *		moves the rows that lie beyond the pages the leaf needs ("the
 *		tail"), in cluster order, onto the lowest empty pages, and the
 *		VACUUM after it truncates the file to about what the rows need.
 *		Rows written sequentially take slightly more pages (0.5% measured,
 *		bench/partitions.sh) than the same rows inserted one by one, which
 *		fill holes: so the tail starts a little beyond the occupied pages'
 *		count.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/freespace.h"
#include "storage/lmgr.h"
#include "utils/rel.h"

#include "partition/leaf_space.h"

/* pages the tail must free, at least, for a tail pass to be worth it */
#define AC_TAIL_MIN_PAGES 8

/* Is page blk empty, as the free space map knows it? */
static bool
ac_page_empty(Relation rel, BlockNumber blk)
{
	return GetRecordedFreeSpace(rel, blk) >= MaxHeapTupleSize;
}

/*
 * The first page of rel's tail, or InvalidBlockNumber when a tail pass is
 * not worth it: the leaf needs about its occupied pages (plus 1% and a few
 * pages of slack); the rows on pages beyond that go, if the empty pages
 * below it can take them and the file would shrink by a twentieth or more.
 */
BlockNumber
ac_tail_start(Relation rel)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(rel);
	BlockNumber empty = 0;
	BlockNumber target;
	BlockNumber blk;
	BlockNumber empty_below = 0;
	BlockNumber tail_pages = 0;

	for (blk = 0; blk < nblocks; blk++)
	{
		CHECK_FOR_INTERRUPTS();
		if (ac_page_empty(rel, blk))
			empty++;
	}
	target = (nblocks - empty) + Max(AC_TAIL_MIN_PAGES, (nblocks - empty) / 100);
	if (target >= nblocks || nblocks - target < Max(AC_TAIL_MIN_PAGES, nblocks / 20))
		return InvalidBlockNumber;
	for (blk = 0; blk < nblocks; blk++)
	{
		bool		is_empty = ac_page_empty(rel, blk);

		if (blk < target && is_empty)
			empty_below++;
		else if (blk >= target && !is_empty)
			tail_pages++;
	}
	if (tail_pages == 0 || empty_below < tail_pages)
		return InvalidBlockNumber;
	return target;
}

/*
 * ac_tail_start() of leaf, or InvalidBlockNumber if a lock on it is not
 * granted at once (the lock is let go of: only the map is read).
 */
BlockNumber
ac_leaf_tail_start(Oid leaf)
{
	Relation	rel;
	BlockNumber start;

	/* a lock this transaction held already stays: each taking is counted */
	if (!ConditionalLockRelationOid(leaf, AccessShareLock))
		return InvalidBlockNumber;
	rel = try_relation_open(leaf, NoLock);
	if (rel == NULL)
	{
		UnlockRelationOid(leaf, AccessShareLock);
		return InvalidBlockNumber;
	}
	start = ac_tail_start(rel);
	relation_close(rel, NoLock);
	UnlockRelationOid(leaf, AccessShareLock);
	return start;
}
