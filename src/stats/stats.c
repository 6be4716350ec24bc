/*-------------------------------------------------------------------------
 *
 * stats.c
 *		The numbers a DBA reads to see fragmentation and its cost:
 *		archive_cluster_fragmentation() (how many heap pages each key's rows
 *		span, against the ideal) and archive_cluster_buffers() (what the
 *		shared buffers hold of a registered table).
 *
 *		Fragmentation reads indexes only, never the heap: it samples keys
 *		from random leaf pages of a btree index whose leading column is the
 *		key, then collects the heap TIDs of each sampled key's index entries
 *		and counts the distinct heap pages they point to.  Index entries of
 *		rows deleted but not yet vacuumed count too: an index scan visits
 *		their pages as well.
 *
 *		The buffer counts come from the shared buffer descriptors, read as
 *		contrib/pg_buffercache does: each header under its spinlock, no pin.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/table.h"
#include "catalog/pg_am.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "optimizer/plancat.h"
#include "storage/bufmgr.h"
#include "storage/buf_internals.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/tuplestore.h"

#include "archive_cluster.h"
#include "archive/compact.h"
#include "compat.h"
#include "archive/key_sample.h"
#include "archive/loose.h"
#include "base/util.h"
#include "registry/config.h"
#include "registry/partitioned.h"

PG_FUNCTION_INFO_V1(archive_cluster_fragmentation);
PG_FUNCTION_INFO_V1(archive_cluster_buffers);

#define AC_MAX_SAMPLE_KEYS 100000

/* keys sampled by the buffers function to get rows per page touched */
#define AC_BUFFERS_SAMPLE_KEYS 50

/* One output row of archive_cluster_fragmentation(). */
typedef struct AcFragRow
{
	int			keys;			/* sampled keys with rows in this tier */
	int64		rows;
	double		avg_pages;
	double		p95_pages;
	int64		max_pages;
	double		avg_ideal;
	bool		has_loose;		/* the archive of a registered table */
	double		avg_loose_pages;
	double		avg_compactable;
} AcFragRow;

static int
ac_compare_int64(const void *a, const void *b)
{
	int64		x = *(const int64 *) a;
	int64		y = *(const int64 *) b;

	return x < y ? -1 : (x > y ? 1 : 0);
}

/*
 * Summarize the keys that have rows: pages per key (average, p95, max)
 * and the ideal, ceil(rows x row bytes / usable page bytes), per key.
 */
static void
ac_summarize(int nkeys, const int64 *rows, const int64 *pages, double rowbytes,
			 AcFragRow *r)
{
	int64	   *sorted = palloc(sizeof(int64) * Max(nkeys, 1));
	double		usable = BLCKSZ - SizeOfPageHeaderData;
	double		sum_pages = 0;
	double		sum_ideal = 0;
	int			i;

	memset(r, 0, sizeof(AcFragRow));
	for (i = 0; i < nkeys; i++)
	{
		if (rows[i] == 0)
			continue;
		sorted[r->keys++] = pages[i];
		r->rows += rows[i];
		sum_pages += pages[i];
		sum_ideal += ceil(rows[i] * rowbytes / usable);
		r->max_pages = Max(r->max_pages, pages[i]);
	}
	if (r->keys > 0)
	{
		qsort(sorted, r->keys, sizeof(int64), ac_compare_int64);
		r->avg_pages = sum_pages / r->keys;
		r->avg_ideal = sum_ideal / r->keys;
		r->p95_pages = sorted[(int) ceil(0.95 * r->keys) - 1];
	}
	pfree(sorted);
}

/* What a compaction would act on (archive tier only). */
static void
ac_summarize_loose(int nkeys, const AcTierCounts *c, double rowbytes, AcFragRow *r)
{
	double		avg_pages;

	r->has_loose = true;
	r->avg_compactable = ac_compactable_average(nkeys, c, rowbytes, &r->avg_loose_pages,
												&avg_pages);
}

/* Append one row to the result of archive_cluster_fragmentation(). */
static void
ac_put_frag(ReturnSetInfo *rsinfo, const char *tier, Oid relid, Oid indexid,
			double table_rows, int64 table_pages, AcFragRow *r)
{
	Datum		values[15];
	bool		nulls[15];

	memset(nulls, 0, sizeof(nulls));
	values[0] = CStringGetTextDatum(tier);
	values[1] = ObjectIdGetDatum(relid);
	values[2] = ObjectIdGetDatum(indexid);
	nulls[2] = !OidIsValid(indexid);
	values[3] = Int64GetDatum((int64) table_rows);
	nulls[3] = table_rows < 0;
	values[4] = Int64GetDatum(table_pages);
	values[5] = Int32GetDatum(r->keys);
	values[6] = Int64GetDatum(r->rows);
	values[7] = Float8GetDatum(r->avg_pages);
	values[8] = Float8GetDatum(r->p95_pages);
	values[9] = Int64GetDatum(r->max_pages);
	values[10] = Float8GetDatum(r->avg_ideal);
	values[11] = Float8GetDatum(r->avg_ideal > 0 ? r->avg_pages / r->avg_ideal : 0);
	values[12] = Float8GetDatum(r->avg_pages > 0 ? (double) r->rows / (r->avg_pages * r->keys) : 0);
	values[13] = Float8GetDatum(r->avg_loose_pages);
	values[14] = Float8GetDatum(r->avg_compactable);
	if (r->keys == 0)
	{
		int			i;

		for (i = 7; i < 15; i++)
			nulls[i] = true;
	}
	nulls[13] = nulls[14] = !r->has_loose || r->keys == 0;
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
}

/*
 * The tiers of a relation: a registered view has two (current, archive),
 * any other table one.  Returns the key column to use.
 */
static char *
ac_tiers(Oid relid, const char *keycol, Oid *heaps, int *ntiers)
{
	AcTableConfig cfg;
	bool		registered;
	char		relkind = get_rel_relkind(relid);

	registered = ac_load_config(relid, &cfg);

	if (registered)
	{
		heaps[0] = cfg.current;
		heaps[1] = cfg.archive;
		*ntiers = 2;
		return keycol ? pstrdup(keycol) : cfg.cluster_by[0];
	}
	if (relkind == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is a partitioned table", get_rel_name(relid)),
				 errdetail("Its rows are in its partitions, each measured on its own."),
				 errhint("Call archive_cluster_fragmentation() on a partition; archive_cluster_partitions() lists those of a registered partitioned table.")));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_MATVIEW)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table or a registered view", get_rel_name(relid))));
	/* a partition of a registered partitioned table: its first cluster column */
	if (keycol == NULL && get_rel_relispartition(relid))
	{
		ListCell   *lc;

		foreach(lc, get_partition_ancestors(relid))
		{
			AcPartitionedConfig pcfg;

			if (ac_load_partitioned(lfirst_oid(lc), &pcfg))
			{
				keycol = pcfg.cluster_by[0];
				break;
			}
		}
	}
	if (keycol == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("key_column must be given for \"%s\", which is not registered",
						get_rel_name(relid)),
				 errhint("Name the column whose rows should sit together, e.g. the customer id.")));
	heaps[0] = relid;
	*ntiers = 1;
	return pstrdup(keycol);
}

/*
 * archive_cluster_fragmentation(relation regclass, key_column name DEFAULT
 * NULL, sample_keys integer DEFAULT 200, seed bigint DEFAULT 0)
 */
Datum
archive_cluster_fragmentation(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid;
	const char *keycol = NULL;
	int			want;
	int64		seed;
	Oid			heaps[2];
	int			ntiers;
	Relation	rels[2];
	Relation	indexes[2];
	AcTierCounts counts[2];
	AcKeys		keys;
	AcLooseSet	loose;
	pg_prng_state rng;
	double		rowbytes;
	int			t;
	int			i;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("relation must not be NULL")));
	relid = PG_GETARG_OID(0);
	ac_check_relation_exists(relid);
	if (!PG_ARGISNULL(1))
		keycol = NameStr(*PG_GETARG_NAME(1));
	if (PG_ARGISNULL(2) || PG_GETARG_INT32(2) < 1 || PG_GETARG_INT32(2) > AC_MAX_SAMPLE_KEYS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("sample_keys must be between 1 and %d", AC_MAX_SAMPLE_KEYS)));
	want = PG_GETARG_INT32(2);
	if (PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("seed must not be NULL")));
	seed = PG_GETARG_INT64(3);

	InitMaterializedSRF(fcinfo, 0);
	keycol = ac_tiers(relid, keycol, heaps, &ntiers);
	/* the archive's loose set: what a compaction would rewrite */
	if (ntiers == 2)
		ac_loose_load(relid, &loose);

	for (t = 0; t < ntiers; t++)
	{
		rels[t] = table_open(heaps[t], AccessShareLock);
		indexes[t] = ac_open_key_index(rels[t], keycol);
	}
	ac_keys_init(&keys, indexes[0]);
	if (ntiers == 2 && indexes[1]->rd_opfamily[0] != indexes[0]->rd_opfamily[0])
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("the indexes on \"%s\" of \"%s\" and \"%s\" use different operator families",
						keycol, RelationGetRelationName(rels[0]),
						RelationGetRelationName(rels[1]))));

	/* up to "want" keys from each tier, merged, then a seeded choice */
	pg_prng_seed(&rng, (uint64) seed);
	ac_sample_keys(indexes[0], want, &rng, &keys);
	if (ntiers == 2)
	{
		AcKeys		k1 = keys;
		int			n = 0;

		ac_sample_keys(indexes[1], want, &rng, &k1);
		keys.keys = repalloc(keys.keys, sizeof(Datum) * (keys.nkeys + k1.nkeys + 1));
		memcpy(keys.keys + keys.nkeys, k1.keys, sizeof(Datum) * k1.nkeys);
		keys.nkeys += k1.nkeys;
		qsort_arg(keys.keys, keys.nkeys, sizeof(Datum), ac_compare_keys, &keys);
		for (i = 0; i < keys.nkeys; i++)
			if (n == 0 || ac_compare_keys(&keys.keys[i], &keys.keys[n - 1], &keys) != 0)
				keys.keys[n++] = keys.keys[i];
		keys.nkeys = n;
		ac_choose_keys(&keys, want, &rng);
	}

	rowbytes = ac_row_bytes(rels[0]);
	for (t = 0; t < ntiers; t++)
	{
		AcFragRow r;

		ac_count_tier(rels[t], indexes[t], &keys, t == 1 ? &loose : NULL, &counts[t]);
		ac_summarize(keys.nkeys, counts[t].rows, counts[t].pages, rowbytes, &r);
		if (t == 1)
			ac_summarize_loose(keys.nkeys, &counts[t], ac_archive_row_bytes(relid, rels[t]), &r);
		ac_put_frag(rsinfo, ntiers == 1 ? "table" : (t == 0 ? "current" : "archive"),
					heaps[t], RelationGetRelid(indexes[t]),
					rels[t]->rd_rel->reltuples, RelationGetNumberOfBlocks(rels[t]), &r);
	}
	if (ntiers == 2)
	{
		int64	   *rows = palloc(sizeof(int64) * Max(keys.nkeys, 1));
		int64	   *pages = palloc(sizeof(int64) * Max(keys.nkeys, 1));
		AcFragRow	r;
		double		reltuples = -1;

		for (i = 0; i < keys.nkeys; i++)
		{
			rows[i] = counts[0].rows[i] + counts[1].rows[i];
			pages[i] = counts[0].pages[i] + counts[1].pages[i];
		}
		ac_summarize(keys.nkeys, rows, pages, rowbytes, &r);
		if (rels[0]->rd_rel->reltuples >= 0 && rels[1]->rd_rel->reltuples >= 0)
			reltuples = rels[0]->rd_rel->reltuples + rels[1]->rd_rel->reltuples;
		ac_put_frag(rsinfo, "overall", relid, InvalidOid, reltuples,
					RelationGetNumberOfBlocks(rels[0]) + RelationGetNumberOfBlocks(rels[1]), &r);
	}

	for (t = 0; t < ntiers; t++)
	{
		index_close(indexes[t], AccessShareLock);
		table_close(rels[t], AccessShareLock);
	}
	return (Datum) 0;
}

/* One relation whose shared buffers are counted. */
typedef struct AcBufTarget
{
	Oid			view;
	const char *tier;
	Oid			relid;
	bool		is_index;
	Oid			spc;
	Oid			number;
	double		rows_per_page;	/* < 0: not known */
	int64		buffers;
	int64		dirty;
	int64		usage;
} AcBufTarget;

/* Rows per heap page touched by a key scan of a tier, from a small sample. */
static double
ac_rows_per_page_touched(Relation heap, const char *keycol)
{
	AttrNumber	attnum = get_attnum(RelationGetRelid(heap), keycol);
	Oid			indexid = attnum > 0 ? ac_key_index(heap, attnum) : InvalidOid;
	Relation	index;
	AcKeys		keys;
	AcTierCounts counts;
	pg_prng_state rng;
	AcFragRow	r;

	if (!OidIsValid(indexid))
		return -1;
	index = index_open(indexid, AccessShareLock);
	ac_keys_init(&keys, index);
	pg_prng_seed(&rng, 0);
	ac_sample_keys(index, AC_BUFFERS_SAMPLE_KEYS, &rng, &keys);
	ac_count_tier(heap, index, &keys, NULL, &counts);
	ac_summarize(keys.nkeys, counts.rows, counts.pages, ac_row_bytes(heap), &r);
	index_close(index, AccessShareLock);
	if (r.keys == 0 || r.avg_pages <= 0)
		return -1;
	return (double) r.rows / (r.avg_pages * r.keys);
}

/* Add a tier's table and each of its indexes to the targets. */
static List *
ac_buffer_targets(List *targets, Oid view, const char *tier, Oid relid,
				  const char *keycol)
{
	Relation	heap = table_open(relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(heap);
	AcBufTarget *bt = palloc0(sizeof(AcBufTarget));
	ListCell   *lc;

	bt->view = view;
	bt->tier = tier;
	bt->relid = relid;
	bt->spc = ac_rel_spc(heap);
	bt->number = ac_rel_number(heap);
	bt->rows_per_page = ac_rows_per_page_touched(heap, keycol);
	targets = lappend(targets, bt);

	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);

		bt = palloc0(sizeof(AcBufTarget));
		bt->view = view;
		bt->tier = tier;
		bt->relid = RelationGetRelid(index);
		bt->is_index = true;
		bt->spc = ac_rel_spc(index);
		bt->number = ac_rel_number(index);
		bt->rows_per_page = -1;
		targets = lappend(targets, bt);
		index_close(index, AccessShareLock);
	}
	list_free(indexes);
	table_close(heap, AccessShareLock);
	return targets;
}

/*
 * archive_cluster_buffers(relation regclass DEFAULT NULL): per relation of a
 * registered table (or of every one), what the shared buffers hold.
 */
Datum
archive_cluster_buffers(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *relations;
	List	   *targets = NIL;
	ListCell   *lc;
	int			i;

	InitMaterializedSRF(fcinfo, 0);

	if (PG_ARGISNULL(0))
		relations = ac_registered_relations();
	else
	{
		ac_check_relation_exists(PG_GETARG_OID(0));
		relations = list_make1_oid(PG_GETARG_OID(0));
	}
	foreach(lc, relations)
	{
		Oid			view = lfirst_oid(lc);
		AcTableConfig cfg;

		if (!ac_load_config(view, &cfg))
		{
			if (PG_ARGISNULL(0))
				continue;		/* unregistered meanwhile */
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("relation \"%s\" is not registered with archive_cluster",
							get_rel_name(view)),
					 errhint("pg_buffercache shows the buffers of any relation.")));
		}
		targets = ac_buffer_targets(targets, view, "current", cfg.current, cfg.cluster_by[0]);
		targets = ac_buffer_targets(targets, view, "archive", cfg.archive, cfg.cluster_by[0]);
	}

	/* one pass over the buffer headers, each read under its spinlock */
	for (i = 0; i < NBuffers; i++)
	{
		BufferDesc *hdr = GetBufferDescriptor(i);
		AcBufState	state;
		Oid			spc,
					db,
					number;
		bool		dirty;
		int			usage;

		CHECK_FOR_INTERRUPTS();
		state = LockBufHdr(hdr);
		if (!(state & BM_VALID))
		{
			ac_unlock_buf_hdr(hdr, state);
			continue;
		}
		spc = ac_tag_spc(&hdr->tag);
		db = ac_tag_db(&hdr->tag);
		number = ac_tag_number(&hdr->tag);
		dirty = (state & BM_DIRTY) != 0;
		usage = BUF_STATE_GET_USAGECOUNT(state);
		ac_unlock_buf_hdr(hdr, state);

		if (db != MyDatabaseId)
			continue;
		foreach(lc, targets)
		{
			AcBufTarget *bt = lfirst(lc);

			if (bt->number == number && bt->spc == spc)
			{
				bt->buffers++;
				bt->dirty += dirty ? 1 : 0;
				bt->usage += usage;
				break;
			}
		}
	}

	foreach(lc, targets)
	{
		AcBufTarget *bt = lfirst(lc);
		Datum		values[10];
		bool		nulls[10];

		memset(nulls, 0, sizeof(nulls));
		values[0] = ObjectIdGetDatum(bt->view);
		values[1] = CStringGetTextDatum(bt->tier);
		values[2] = ObjectIdGetDatum(bt->relid);
		values[3] = CStringGetTextDatum(bt->is_index ? "index" : "table");
		values[4] = Int64GetDatum(bt->buffers);
		values[5] = Int64GetDatum(bt->dirty);
		values[6] = Float8GetDatum(100.0 * bt->buffers / NBuffers);
		values[7] = Float8GetDatum(bt->buffers > 0 ? (double) bt->usage / bt->buffers : 0);
		nulls[7] = bt->buffers == 0;
		values[8] = Float8GetDatum(bt->rows_per_page);
		nulls[8] = bt->rows_per_page < 0;
		values[9] = Int64GetDatum((int64) (bt->buffers * Max(bt->rows_per_page, 0)));
		nulls[9] = bt->rows_per_page < 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
