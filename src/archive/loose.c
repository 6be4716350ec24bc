/*-------------------------------------------------------------------------
 *
 * loose.c
 *		The loose set of a registered table: the pages of <t>_archive that
 *		a compaction reads and rewrites.  A run's batch adds the pages it
 *		wrote; a compaction replaces the set by the pages it left loose
 *		(the ends of keys, less than a page each, written together) and
 *		leaves out the pages it filled with one key's rows ("settled"
 *		pages, never rewritten).  Stored in archive_cluster_loose as an
 *		int8multirange of page numbers, in the transaction of the run or
 *		compaction that changes it, as the extension's owner.  Each function
 *		connects to SPI itself; what it returns is in the caller's memory.
 *
 *		The set only says where to look: a page in it may hold anything
 *		(its rows are rewritten, whatever they are) and a page left out of
 *		it is only never looked at.  So a stale set (a truncated table, a
 *		restored dump, which does not keep it) costs work or clustering,
 *		never a row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"

#include "archive_cluster.h"
#include "archive/loose.h"
#include "registry/config.h"

static int
ac_compare_blocknums(const void *a, const void *b)
{
	BlockNumber x = *(const BlockNumber *) a;
	BlockNumber y = *(const BlockNumber *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/* The pages as an int8multirange literal: sorted, runs of pages joined. */
static char *
ac_blocks_literal(BlockNumber *blocks, int nblocks)
{
	StringInfoData buf;
	int			i = 0;

	qsort(blocks, nblocks, sizeof(BlockNumber), ac_compare_blocknums);
	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	while (i < nblocks)
	{
		BlockNumber start = blocks[i];
		BlockNumber end = start + 1;

		while (++i < nblocks && blocks[i] <= end)
			end = blocks[i] + 1;
		appendStringInfo(&buf, "%s[%u,%u)", buf.len > 1 ? "," : "", start, end);
	}
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

/*
 * Store the pages (sorted in place) as the table's loose set: added to it
 * for a run's batch, replacing it for a compaction (which counts as the
 * set's one batch, none when it left nothing loose).
 */
static void
ac_loose_store(Oid relation, BlockNumber *blocks, int nblocks, bool compaction)
{
	Oid			argtypes[3] = {REGCLASSOID, TEXTOID, INT4OID};
	Datum		values[3];
	char	   *sql;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	sql = psprintf("INSERT INTO %s AS l (relation, blocks, batches, compacted_at)"
				   " VALUES ($1, $2::pg_catalog.int8multirange, $3, %s)"
				   " ON CONFLICT (relation) DO UPDATE SET %s",
				   ac_extension_object("archive_cluster_loose"),
				   compaction ? "pg_catalog.now()" : "NULL",
				   compaction ?
				   "blocks = excluded.blocks, batches = excluded.batches,"
				   " compacted_at = excluded.compacted_at" :
				   "blocks = l.blocks OPERATOR(pg_catalog.+) excluded.blocks,"
				   " batches = l.batches OPERATOR(pg_catalog.+) 1");
	values[0] = ObjectIdGetDatum(relation);
	values[1] = CStringGetTextDatum(ac_blocks_literal(blocks, nblocks));
	values[2] = Int32GetDatum(compaction && nblocks == 0 ? 0 : 1);
	ac_exec_as_extension_owner(sql, 3, argtypes, values, NULL, SPI_OK_INSERT);
	SPI_finish();
}

/* A run's batch wrote these pages (sorted in place). */
void
ac_loose_add(Oid relation, BlockNumber *blocks, int nblocks)
{
	if (nblocks > 0)
		ac_loose_store(relation, blocks, nblocks, false);
}

/* A compaction left these pages loose (sorted in place); the rest is settled. */
void
ac_loose_replace(Oid relation, BlockNumber *blocks, int nblocks)
{
	ac_loose_store(relation, blocks, nblocks, true);
}

/* The loose set of a table; empty if it has none. */
void
ac_loose_load(Oid relation, AcLooseSet *set)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	char	   *sql;
	uint64		n;
	uint64		i;

	memset(set, 0, sizeof(AcLooseSet));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	sql = psprintf("SELECT pg_catalog.lower(r), pg_catalog.upper(r), l.batches"
				   " FROM %s l, pg_catalog.unnest(l.blocks) r"
				   " WHERE l.relation OPERATOR(pg_catalog.=) $1"
				   " ORDER BY 1",
				   ac_extension_object("archive_cluster_loose"));
	values[0] = ObjectIdGetDatum(relation);
	n = ac_exec_as_extension_owner(sql, 1, argtypes, values, NULL, SPI_OK_SELECT);
	/* in the caller's memory: SPI's goes with SPI_finish() */
	set->ranges = MemoryContextAlloc(caller, sizeof(AcBlockRange) * Max(n, 1));
	for (i = 0; i < n; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		nostart;
		bool		noend;
		bool		isnull;
		int64		start = DatumGetInt64(SPI_getbinval(tup, desc, 1, &nostart));
		int64		end = DatumGetInt64(SPI_getbinval(tup, desc, 2, &noend));

		if (nostart || noend)
			continue;			/* not written by us: an unbounded range */
		start = Max(start, 0);
		end = Min(end, (int64) MaxBlockNumber);
		if (end <= start)
			continue;
		set->ranges[set->nranges].start = (BlockNumber) start;
		set->ranges[set->nranges].end = (BlockNumber) end;
		set->nranges++;
		set->pages += end - start;
		set->batches = DatumGetInt32(SPI_getbinval(tup, desc, 3, &isnull));
	}
	SPI_finish();
}

/* Is this page in the set?  A binary search of its ranges. */
bool
ac_loose_contains(const AcLooseSet *set, BlockNumber blk)
{
	int			lo = 0;
	int			hi = set->nranges - 1;

	while (lo <= hi)
	{
		int			mid = (lo + hi) / 2;

		if (blk < set->ranges[mid].start)
			hi = mid - 1;
		else if (blk >= set->ranges[mid].end)
			lo = mid + 1;
		else
			return true;
	}
	return false;
}
