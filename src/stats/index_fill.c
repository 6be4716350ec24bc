/*-------------------------------------------------------------------------
 *
 * index_fill.c
 *		How full the leaf pages of a btree index are, from a sample of its
 *		pages: archive_cluster_index_fill(), and the worker's test of
 *		whether an archive's index is worth rebuilding (worker.c).
 *
 *		A compaction deletes rows of the archive and writes them again: it
 *		adds their new index entries beside the old ones, splitting full
 *		leaf pages in two, and the VACUUM after it removes the old entries,
 *		leaving those pages about half empty.  Btree never merges pages that
 *		are not empty, so after a few compactions the archive's indexes are
 *		twice the size of a fresh build, which fills leaf pages to their
 *		fillfactor (90%).  The fill measured here is the used space of the
 *		leaf pages over their usable space, as pgstatindex's
 *		avg_leaf_density, with pages deleted or never used counted as
 *		empty: the fresh build's size over the index's is then about the
 *		fill over 0.9.  Pages are picked at random (all of them in a small
 *		index), read under a share lock one at a time; inner pages and the
 *		metapage are not counted.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "access/relation.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "common/pg_prng.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "utils/rel.h"

#include "stats/index_fill.h"

PG_FUNCTION_INFO_V1(archive_cluster_index_fill);

/*
 * Used space of the leaf pages of btree index over their usable space, from
 * at most sample_pages pages; 1 when the index has no leaf page to look at.
 */
double
ac_index_leaf_fill(Relation index, int sample_pages)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	BufferAccessStrategy strategy = GetAccessStrategy(BAS_BULKREAD);
	Size		usable = BLCKSZ - SizeOfPageHeaderData - MAXALIGN(sizeof(BTPageOpaqueData));
	pg_prng_state rng;
	bool		all = nblocks - 1 <= (BlockNumber) sample_pages;
	int			n = all ? (int) nblocks - 1 : sample_pages;
	double		used = 0;
	int			pages = 0;
	int			i;

	if (nblocks <= 1)
		return 1.0;				/* the metapage alone */
	pg_prng_seed(&rng, RelationGetRelid(index));
	for (i = 0; i < n; i++)
	{
		BlockNumber blkno = all ? (BlockNumber) i + 1 :
			(BlockNumber) pg_prng_uint64_range(&rng, 1, nblocks - 1);
		Buffer		buffer;
		Page		page;

		CHECK_FOR_INTERRUPTS();
		buffer = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, strategy);
		LockBuffer(buffer, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buffer);
		if (PageIsNew(page))
			pages++;			/* never used: empty */
		else if (PageGetSpecialSize(page) == MAXALIGN(sizeof(BTPageOpaqueData)))
		{
			BTPageOpaque opaque = BTPageGetOpaque(page);

			if (P_IGNORE(opaque))
				pages++;		/* deleted or half-dead: empty */
			else if (P_ISLEAF(opaque))
			{
				pages++;
				used += usable - PageGetExactFreeSpace(page);
			}
		}
		UnlockReleaseBuffer(buffer);
	}
	FreeAccessStrategy(strategy);
	return pages > 0 ? used / ((double) pages * usable) : 1.0;
}

/*
 * archive_cluster_index_fill(index regclass, sample_pages integer): the fill
 * of a btree index's leaf pages (above), from at most sample_pages random
 * pages.  Granted to pg_stat_scan_tables, as pgstatindex() is: it reads
 * index pages, not rows.
 */
Datum
archive_cluster_index_fill(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	int			sample_pages = PG_GETARG_INT32(1);
	Relation	index;
	double		fill;

	if (sample_pages < 1 || sample_pages > 1000000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sample_pages must be between 1 and 1000000")));
	index = relation_open(indexoid, AccessShareLock);
	if (index->rd_rel->relkind != RELKIND_INDEX || index->rd_rel->relam != BTREE_AM_OID)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a btree index", RelationGetRelationName(index))));
	if (RELATION_IS_OTHER_TEMP(index))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot access temporary indexes of other sessions")));
	/* one being built writes pages past shared buffers: read none of them */
	if (!index->rd_index->indisvalid)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("index \"%s\" is not valid", RelationGetRelationName(index))));
	fill = ac_index_leaf_fill(index, sample_pages);
	relation_close(index, AccessShareLock);
	PG_RETURN_FLOAT8(fill);
}
