/*-------------------------------------------------------------------------
 *
 * key_sample.c
 *		Sampling keys from a btree index whose leading column is the key,
 *		and, for each sampled key, the heap TIDs of its index entries: how
 *		many rows, how many distinct heap pages, and how many of those in a
 *		tier's loose set (loose.c).  Indexes only, never the heap.  Used by
 *		archive_cluster_fragmentation() (stats.c) and by the test of
 *		whether a compaction is due (compact.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "catalog/pg_am.h"
#include "catalog/pg_index.h"
#include "miscadmin.h"
#include "optimizer/plancat.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "archive/key_sample.h"

/*
 * A valid, non-partial btree index of heap whose leading column is attnum;
 * InvalidOid when there is none.
 */
Oid
ac_key_index(Relation heap, AttrNumber attnum)
{
	List	   *indexes = RelationGetIndexList(heap);
	ListCell   *lc;
	Oid			result = InvalidOid;

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		if (index->rd_rel->relam == BTREE_AM_OID &&
			index->rd_index->indisvalid &&
			index->rd_index->indkey.values[0] == attnum &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
			result = RelationGetRelid(index);
		index_close(index, AccessShareLock);
		if (OidIsValid(result))
			break;
	}
	list_free(indexes);
	return result;
}

/* Open the key index of a tier, or fail with a hint. */
Relation
ac_open_key_index(Relation heap, const char *keycol)
{
	AttrNumber	attnum = get_attnum(RelationGetRelid(heap), keycol);
	Oid			indexid;

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						keycol, RelationGetRelationName(heap))));
	indexid = ac_key_index(heap, attnum);
	if (!OidIsValid(indexid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("no btree index of \"%s\" has \"%s\" as its leading column",
						RelationGetRelationName(heap), keycol),
				 errhint("Fragmentation is read from such an index; create one, e.g. CREATE INDEX ON %s (%s).",
						 quote_identifier(RelationGetRelationName(heap)),
						 quote_identifier(keycol))));
	return index_open(indexid, AccessShareLock);
}

int
ac_compare_keys(const void *a, const void *b, void *arg)
{
	AcKeys	   *k = (AcKeys *) arg;

	return DatumGetInt32(FunctionCall2Coll(&k->cmp, k->collation,
										   *(const Datum *) a, *(const Datum *) b));
}

/* Comparison and equality for the leading column of index. */
void
ac_keys_init(AcKeys *k, Relation index)
{
	Oid			opfamily = index->rd_opfamily[0];
	Oid			opcintype = index->rd_opcintype[0];
	Oid			eqop;

	memset(k, 0, sizeof(AcKeys));
	fmgr_info_copy(&k->cmp, index_getprocinfo(index, 1, BTORDER_PROC), CurrentMemoryContext);
	k->collation = index->rd_indcollation[0];
	eqop = get_opfamily_member(opfamily, opcintype, opcintype, BTEqualStrategyNumber);
	if (!OidIsValid(eqop))
		elog(ERROR, "no equality operator for the key of index \"%s\"",
			 RelationGetRelationName(index));
	k->eqproc = get_opcode(eqop);
	get_typlenbyval(TupleDescAttr(RelationGetDescr(index), 0)->atttypid,
					&k->typlen, &k->typbyval);
}

/*
 * Add the leading key of one item, or of every item, of a leaf page of a
 * btree index to keys[].  Consecutive equal keys of a page are added once.
 */
static void
ac_keys_from_block(Relation index, BlockNumber blkno, pg_prng_state *rng,
				   bool all, AcKeys *k, int *maxkeys)
{
	Buffer		buf;
	Page		page;
	BTPageOpaque opaque;
	OffsetNumber first;
	OffsetNumber last;
	OffsetNumber off;
	TupleDesc	desc = RelationGetDescr(index);
	Datum		prev = (Datum) 0;
	bool		have_prev = false;

	buf = ReadBufferExtended(index, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	opaque = BTPageGetOpaque(page);
	if (PageIsNew(page) || !P_ISLEAF(opaque) || P_IGNORE(opaque))
	{
		UnlockReleaseBuffer(buf);
		return;
	}
	first = P_FIRSTDATAKEY(opaque);
	last = PageGetMaxOffsetNumber(page);
	if (first > last)
	{
		UnlockReleaseBuffer(buf);
		return;
	}
	if (!all)
		first = last = (OffsetNumber) pg_prng_uint64_range(rng, first, last);

	for (off = first; off <= last; off++)
	{
		IndexTuple	itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, off));
		bool		isnull;
		Datum		key = index_getattr(itup, 1, desc, &isnull);

		if (isnull)
			continue;
		if (have_prev && ac_compare_keys(&prev, &key, k) == 0)
			continue;
		if (k->nkeys == *maxkeys)
		{
			*maxkeys *= 2;
			k->keys = repalloc_huge(k->keys, sizeof(Datum) * *maxkeys);
		}
		k->keys[k->nkeys++] = datumCopy(key, k->typbyval, k->typlen);
		prev = key;
		have_prev = true;
	}
	UnlockReleaseBuffer(buf);
}

/* Keep a seeded choice of "want" of the sorted, distinct keys, sorted. */
void
ac_choose_keys(AcKeys *k, int want, pg_prng_state *rng)
{
	int			i;

	if (k->nkeys <= want)
		return;
	for (i = 0; i < want; i++)
	{
		int			j = (int) pg_prng_uint64_range(rng, i, k->nkeys - 1);
		Datum		tmp = k->keys[i];

		k->keys[i] = k->keys[j];
		k->keys[j] = tmp;
	}
	k->nkeys = want;
	qsort_arg(k->keys, k->nkeys, sizeof(Datum), ac_compare_keys, k);
}

/*
 * Sample up to "want" distinct keys of an index: one item from each of
 * random blocks (every item of a small index), then a seeded choice among
 * the distinct keys found.  The result is sorted.
 */
void
ac_sample_keys(Relation index, int want, pg_prng_state *rng, AcKeys *k)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(index);
	int			maxkeys = 1024;
	int			probes = want * 3;
	int			ndistinct;
	int			i;

	k->keys = palloc(sizeof(Datum) * maxkeys);
	k->nkeys = 0;
	if (nblocks <= 1)
		return;

	if (nblocks - 1 <= (BlockNumber) probes)
	{
		for (i = 1; i < (int) nblocks; i++)
		{
			CHECK_FOR_INTERRUPTS();
			ac_keys_from_block(index, i, rng, true, k, &maxkeys);
		}
	}
	else
	{
		for (i = 0; i < probes; i++)
		{
			CHECK_FOR_INTERRUPTS();
			ac_keys_from_block(index,
							   (BlockNumber) pg_prng_uint64_range(rng, 1, nblocks - 1),
							   rng, false, k, &maxkeys);
		}
	}

	if (k->nkeys == 0)
		return;
	qsort_arg(k->keys, k->nkeys, sizeof(Datum), ac_compare_keys, k);
	ndistinct = 1;
	for (i = 1; i < k->nkeys; i++)
		if (ac_compare_keys(&k->keys[i], &k->keys[ndistinct - 1], k) != 0)
			k->keys[ndistinct++] = k->keys[i];
	k->nkeys = ndistinct;

	ac_choose_keys(k, want, rng);
}

static int
ac_compare_blocks(const void *a, const void *b)
{
	BlockNumber x = *(const BlockNumber *) a;
	BlockNumber y = *(const BlockNumber *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * For each key, the index entries of a tier and the distinct heap pages
 * they point to; with a loose set, also how many of those rows and pages
 * are in it.
 */
void
ac_count_tier(Relation heap, Relation index, AcKeys *k, const AcLooseSet *loose,
			  AcTierCounts *out)
{
	IndexScanDesc scan;
	ScanKeyData skey;
	BlockNumber *blocks;
	int64		maxblocks = 1024;
	int			i;

	out->rows = palloc0(sizeof(int64) * Max(k->nkeys, 1));
	out->pages = palloc0(sizeof(int64) * Max(k->nkeys, 1));
	out->loose_rows = palloc0(sizeof(int64) * Max(k->nkeys, 1));
	out->loose_pages = palloc0(sizeof(int64) * Max(k->nkeys, 1));
	blocks = palloc(sizeof(BlockNumber) * maxblocks);

	scan = ac_index_beginscan(heap, index, GetActiveSnapshot(), 1, 0);
	for (i = 0; i < k->nkeys; i++)
	{
		ItemPointer tid;
		int64		n = 0;
		int64		j;

		CHECK_FOR_INTERRUPTS();
		ScanKeyEntryInitialize(&skey, 0, 1, BTEqualStrategyNumber, InvalidOid,
							   k->collation, k->eqproc, k->keys[i]);
		index_rescan(scan, &skey, 1, NULL, 0);
		while ((tid = index_getnext_tid(scan, ForwardScanDirection)) != NULL)
		{
			if (n == maxblocks)
			{
				maxblocks *= 2;
				blocks = repalloc_huge(blocks, sizeof(BlockNumber) * maxblocks);
			}
			blocks[n++] = ItemPointerGetBlockNumber(tid);
		}
		if (n > 0)
			qsort(blocks, n, sizeof(BlockNumber), ac_compare_blocks);
		for (j = 0; j < n; j++)
		{
			bool		first = j == 0 || blocks[j] != blocks[j - 1];
			bool		in_loose = loose != NULL && ac_loose_contains(loose, blocks[j]);

			out->pages[i] += first;
			if (in_loose)
			{
				out->loose_rows[i]++;
				out->loose_pages[i] += first;
			}
		}
		out->rows[i] = n;
	}
	index_endscan(scan);
	pfree(blocks);
}

/* Bytes a row of heap takes on a page: tuple header, data, line pointer. */
double
ac_row_bytes(Relation heap)
{
	int32		width = get_rel_data_width(heap, NULL);

	return MAXALIGN(SizeofHeapTupleHeader + width) + sizeof(ItemIdData);
}


/*
 * What a compaction would act on, for the sampled keys of an archive: the
 * loose pages of a key's rows, and how many fewer pages those rows would
 * take rewritten together: one run of rows x row bytes / usable page bytes
 * of a page, plus the page its start shares with the key before (what the
 * same rows in one sorted stream span, on average).  Averages over the keys
 * with rows in the tier: the first in *avg_loose, all the pages of their
 * rows in *avg_pages, the second returned.  The second is averaged before
 * it is floored at 0: a key's ends, left on pages shared with its
 * neighbours, span a page more or less than that average, so a compacted
 * archive measures about 0 however few rows its keys have.
 */
double
ac_compactable_average(int nkeys, const AcTierCounts *c, double rowbytes, double *avg_loose,
					   double *avg_pages)
{
	double		usable = BLCKSZ - SizeOfPageHeaderData;
	double		sum_loose = 0;
	double		sum_pages = 0;
	double		sum_compactable = 0;
	int			keys = 0;
	int			i;

	*avg_loose = 0;
	*avg_pages = 0;
	for (i = 0; i < nkeys; i++)
	{
		if (c->rows[i] == 0)
			continue;
		keys++;
		sum_loose += c->loose_pages[i];
		sum_pages += c->pages[i];
		if (c->loose_rows[i] > 0)
			sum_compactable += c->loose_pages[i] - (c->loose_rows[i] * rowbytes / usable + 1);
	}
	if (keys == 0)
		return 0;
	*avg_loose = sum_loose / keys;
	*avg_pages = sum_pages / keys;
	return Max(sum_compactable / keys, 0);
}
