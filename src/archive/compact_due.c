/*-------------------------------------------------------------------------
 *
 * compact_due.c
 *		What a compaction of a registered table's archive measures before
 *		it starts (compact.c): the bytes a row of the archive takes, the
 *		share of a key's pages a compaction would save (is it due), and the
 *		archive's cluster columns it sorts by.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_type_d.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/typcache.h"

#include "archive_cluster.h"
#include "archive/compact.h"
#include "archive/key_sample.h"
#include "archive/loose.h"
#include "registry/config.h"
#include "registry/tiers.h"

/* keys sampled to decide whether a compaction is due */
#define AC_DUE_SAMPLE_KEYS 100

/*
 * Bytes a row of the archive takes on a page, from what the table's last
 * runs wrote (archive_cluster_run_log.bytes_written, the rows' own bytes),
 * aligned and with its line pointer; the planner's estimate of the row width
 * when no run has recorded it.
 */
double
ac_archive_row_bytes(Oid relation, Relation arc)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	double		result = 0;
	char	   *sql;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	sql = psprintf("SELECT pg_catalog.sum(bytes_written)::pg_catalog.float8"
				   " OPERATOR(pg_catalog./) NULLIF(pg_catalog.sum(rows_moved), 0)"
				   " FROM (SELECT bytes_written, rows_moved FROM %s"
				   "  WHERE relation OPERATOR(pg_catalog.=) $1 AND error IS NULL"
				   "  AND bytes_written OPERATOR(pg_catalog.>) 0"
				   "  ORDER BY run_id DESC LIMIT 20) r",
				   ac_extension_object("archive_cluster_run_log"));
	values[0] = ObjectIdGetDatum(relation);
	if (ac_exec_as_extension_owner(sql, 1, argtypes, values, NULL, SPI_OK_SELECT) == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			result = MAXALIGN((Size) (DatumGetFloat8(d) + 0.5)) + sizeof(ItemIdData);
	}
	SPI_finish();
	return result > 0 ? result : ac_row_bytes(arc);
}

/*
 * The share of its archive's heap pages that compacting this table would
 * save when reading a key's rows: over keys sampled from the archive's index
 * on its key (the first cluster column), the pages per key a compaction
 * would save (ac_compactable_average()) over the pages per key.  So a
 * compaction is due as soon as the runs since the last one make reading a
 * key's archived rows that much dearer than reading them compacted, whatever
 * the number of rows a key has.  0 when the archive has no loose pages or no
 * such index.
 */
double
ac_compactable_share(AcTableConfig *cfg)
{
	Relation	arc;
	Relation	index;
	AcLooseSet	loose;
	AcKeys		keys;
	AcTierCounts counts;
	pg_prng_state rng;
	AttrNumber	cols[AC_MAX_CLUSTER_COLS];
	Oid			ops[AC_MAX_CLUSTER_COLS];
	Oid			colls[AC_MAX_CLUSTER_COLS];
	bool		nullsfirst[AC_MAX_CLUSTER_COLS];
	AttrNumber	attnum;
	Oid			indexid;
	double		avg_loose;
	double		compactable;
	double		avg_pages;

	ac_loose_load(cfg->relation, &loose);
	if (loose.nranges == 0)
		return 0;
	arc = table_open(cfg->archive, AccessShareLock);
	ac_archive_sort_columns(cfg, arc, cols, ops, colls, nullsfirst);
	attnum = cols[0];
	indexid = ac_key_index(arc, attnum);
	if (!OidIsValid(indexid))
	{
		table_close(arc, AccessShareLock);
		return 0;
	}
	index = index_open(indexid, AccessShareLock);
	ac_keys_init(&keys, index);
	pg_prng_seed(&rng, 0);
	ac_sample_keys(index, AC_DUE_SAMPLE_KEYS, &rng, &keys);
	PushActiveSnapshot(GetTransactionSnapshot());
	ac_count_tier(arc, index, &keys, &loose, &counts);
	PopActiveSnapshot();
	compactable = ac_compactable_average(keys.nkeys, &counts,
										 ac_archive_row_bytes(cfg->relation, arc),
										 &avg_loose, &avg_pages);
	index_close(index, AccessShareLock);
	table_close(arc, AccessShareLock);
	return avg_pages > 0 ? compactable / avg_pages : 0;
}

/*
 * The cluster columns of the archive (sort columns, operators and
 * collations), by way of the view's columns, as the mover finds them.
 */
void
ac_archive_sort_columns(AcTableConfig *cfg, Relation arc, AttrNumber *cols, Oid *ops,
						Oid *colls, bool *nullsfirst)
{
	Relation	view = relation_open(cfg->relation, AccessShareLock);
	AttrNumber *curatt;
	AttrNumber *arcatt;
	int			i;

	ac_tiers_columns(view, cfg->table_mode, cfg->current, arc, &curatt, &arcatt);
	for (i = 0; i < cfg->ncluster; i++)
	{
		AttrNumber	attno = arcatt[ac_view_column_required(view, cfg->cluster_by[i])];
		Form_pg_attribute att;

		if (attno == InvalidAttrNumber)
			elog(ERROR, "cluster column \"%s\" has no column in \"%s\"",
				 cfg->cluster_by[i], RelationGetRelationName(arc));
		att = TupleDescAttr(RelationGetDescr(arc), attno - 1);
		cols[i] = attno;
		ops[i] = lookup_type_cache(att->atttypid, TYPECACHE_LT_OPR)->lt_opr;
		colls[i] = att->attcollation;
		nullsfirst[i] = false;
	}
	relation_close(view, NoLock);
}
