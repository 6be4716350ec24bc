/*-------------------------------------------------------------------------
 *
 * threshold.c
 *		When a registered table is due: the batch threshold (distinct keys x
 *		rows per page, the seed's rule, or batch_rows), the cutoff of the hot
 *		window, estimates of the eligible rows from the statistics (the
 *		worker's cheap test), and archive_cluster_table_state(), which shows
 *		them.  Reads the catalogs and statistics only: no table is locked.
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

#include "archive_cluster.h"
#include "compat.h"
#include "base/guc.h"
#include "archive/threshold.h"
#include "registry/tiers.h"
#include "base/util.h"
#include "registry/config.h"

PG_FUNCTION_INFO_V1(archive_cluster_table_state);

/* Statistics of one column: distinct values and average width. */
static bool
ac_column_stats(Oid relid, AttrNumber attnum, double reltuples,
				double *ndistinct, int32 *width)
{
	HeapTuple	tup;
	Form_pg_statistic st;

	tup = SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(relid),
						  Int16GetDatum(attnum), BoolGetDatum(false));
	if (!HeapTupleIsValid(tup))
		return false;
	st = (Form_pg_statistic) GETSTRUCT(tup);
	if (ndistinct)
		*ndistinct = st->stadistinct >= 0 ? st->stadistinct :
			-st->stadistinct * Max(reltuples, 0);
	if (width)
		*width = st->stawidth;
	ReleaseSysCache(tup);
	return true;
}

static double
ac_reltuples(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	double		result;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	result = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
	ReleaseSysCache(tup);
	return result;
}

/*
 * Rows of average width that fit on a heap page, from the statistics of
 * every column of relid; < 0 when a column has no statistics.
 */
static double
ac_rows_per_page(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	int			natts;
	Size		width = 0;
	Size		rowbytes;
	int			i;

	/* from the catalogs alone: no lock, so a locked table never waits here */
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	natts = ((Form_pg_class) GETSTRUCT(tup))->relnatts;
	ReleaseSysCache(tup);
	for (i = 1; i <= natts; i++)
	{
		int32		w;
		bool		dropped;

		tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(relid), Int16GetDatum(i));
		if (!HeapTupleIsValid(tup))
			continue;
		dropped = ((Form_pg_attribute) GETSTRUCT(tup))->attisdropped;
		ReleaseSysCache(tup);
		if (dropped)
			continue;
		if (!ac_column_stats(relid, i, 0, NULL, &w))
			return -1;
		width += w;
	}

	rowbytes = MAXALIGN(SizeofHeapTupleHeader + width) + sizeof(ItemIdData);
	return floor((double) (BLCKSZ - SizeOfPageHeaderData) / rowbytes);
}

/*
 * The batch size: batch_rows when set, else distinct values of the leading
 * cluster column x rows per page (the seed's rule: one page per key and
 * batch), from the statistics of the current and archive tables.
 */
void
ac_compute_threshold(AcTableConfig *cfg, AcThreshold *th)
{
	double		nd = -1;
	int			t;

	th->distinct_keys = -1;
	th->rows_per_page = -1;
	for (t = 0; t < 2; t++)
	{
		Oid			relid = t == 0 ? cfg->current : cfg->archive;
		AttrNumber	attnum = get_attnum(relid, cfg->cluster_by[0]);
		double		d;
		double		rpp;

		if (attnum > 0 &&
			ac_column_stats(relid, attnum, ac_reltuples(relid), &d, NULL) &&
			d > th->distinct_keys)
			th->distinct_keys = d;
		if (th->rows_per_page < 0 && (rpp = ac_rows_per_page(relid)) > 0)
			th->rows_per_page = rpp;
	}
	nd = th->distinct_keys;

	if (cfg->batch_rows > 0)
	{
		th->rows = cfg->batch_rows;
		th->source = "batch_rows";
	}
	else if (nd > 0 && th->rows_per_page > 0)
	{
		th->rows = (int64) Min(ceil(nd * th->rows_per_page), (double) AC_MAX_BATCH_ROWS);
		th->source = "statistics";
	}
	else
	{
		th->rows = AC_DEFAULT_THRESHOLD;
		th->source = "default";
	}
}

/* now() - hot_window */
TimestampTz
ac_cutoff(AcTableConfig *cfg)
{
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
												   TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
												   IntervalPGetDatum(&cfg->hot_window)));
}

/* the cutoff as a value of the age column's type */
int64
ac_cutoff_for_type(AcTableConfig *cfg, Oid agetype)
{
	TimestampTz cutoff = ac_cutoff(cfg);

	if (getBaseType(agetype) == TIMESTAMPOID)
		return DatumGetTimestamp(DirectFunctionCall1(timestamptz_timestamp,
													 TimestampTzGetDatum(cutoff)));
	return cutoff;
}

/*
 * Fraction of the rows of <t>_current older than the cutoff, from the
 * histogram of the age column; -1 when there are no statistics.
 */
static double
ac_eligible_fraction(AcTableConfig *cfg)
{
	AttrNumber	attnum = get_attnum(cfg->current, cfg->age_column);
	HeapTuple	tup;
	AttStatsSlot sslot;
	int64		cutoff;
	double		frac;
	Oid			agetype;
	int			i;
	int			below = 0;

	/* an estimate by name, from the statistics only: a timestamp column's */
	if (attnum <= 0)
		return -1;
	agetype = getBaseType(get_atttype(cfg->current, attnum));
	if (agetype != TIMESTAMPOID && agetype != TIMESTAMPTZOID)
		return -1;
	tup = SearchSysCache3(STATRELATTINH, ObjectIdGetDatum(cfg->current),
						  Int16GetDatum(attnum), BoolGetDatum(false));
	if (!HeapTupleIsValid(tup))
		return -1;
	if (!get_attstatsslot(&sslot, tup, STATISTIC_KIND_HISTOGRAM, InvalidOid,
						  ATTSTATSSLOT_VALUES) || sslot.nvalues < 2)
	{
		ReleaseSysCache(tup);
		return -1;
	}
	cutoff = ac_cutoff_for_type(cfg, agetype);
	for (i = 0; i < sslot.nvalues; i++)
		if (DatumGetInt64(sslot.values[i]) < cutoff)
			below++;
	frac = below == 0 ? 0 : (double) (below - 1) / (sslot.nvalues - 1);
	if (below == sslot.nvalues)
		frac = 1;
	free_attstatsslot(&sslot);
	ReleaseSysCache(tup);
	return frac;
}

/*
 * Live rows of a table: from the cumulative statistics, which follow every
 * committed insert and delete, else from pg_class; -1 when unknown.
 */
static double
ac_live_rows(Oid relid)
{
	PgStat_StatTabEntry *tabentry = pgstat_fetch_stat_tabentry(relid);

	if (tabentry != NULL)
		return (double) ac_stat_live_tuples(tabentry);
	return ac_reltuples(relid);
}

/*
 * Estimated rows of <t>_current older than the cutoff; -1 when there are
 * no statistics.
 */
static int64
ac_eligible_estimate(AcTableConfig *cfg)
{
	double		live = ac_live_rows(cfg->current);
	double		frac = ac_eligible_fraction(cfg);

	if (live < 0 || frac < 0)
		return -1;
	return (int64) (frac * live);
}

/*
 * The background worker's cheap test of whether a table may be due: from
 * statistics and estimates only, never a scan.  Without a histogram of the
 * age column, every live row counts as eligible; the run itself then counts
 * exactly and moves nothing unless the threshold is reached.
 */
bool
ac_table_due(AcTableConfig *cfg, int64 threshold)
{
	double		live = ac_live_rows(cfg->current);
	double		frac = ac_eligible_fraction(cfg);

	if (live < 0)
		return true;			/* never analyzed nor counted: look */
	return live * (frac < 0 ? 1.0 : frac) >= threshold;
}

/*
 * archive_cluster_table_state(relation regclass): the threshold and
 * estimates, from the tables' statistics; NULLs for a caller who may not
 * read the table (as pg_stats hides the statistics of such tables).
 */
Datum
archive_cluster_table_state(PG_FUNCTION_ARGS)
{
	Oid			relation = PG_GETARG_OID(0);
	AcTableConfig cfg;
	AcThreshold th;
	TupleDesc	tupdesc;
	Datum		values[7];
	bool		nulls[7] = {false, false, false, false, false, false, false};
	double		reltuples;
	int64		eligible;
	HeapTuple	result;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	ac_check_relation_exists(relation);
	if (!ac_load_config(relation, &cfg))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" is not registered with archive_cluster",
						get_rel_name(relation))));

	if (pg_class_aclcheck(relation, GetUserId(), ACL_SELECT) != ACLCHECK_OK)
	{
		for (int i = 0; i < 7; i++)
			nulls[i] = true;
		PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
	}

	ac_compute_threshold(&cfg, &th);
	values[0] = Int64GetDatum(th.rows);
	values[1] = CStringGetTextDatum(th.source);
	values[2] = Float8GetDatum(th.distinct_keys);
	nulls[2] = th.distinct_keys < 0;
	values[3] = Float8GetDatum(th.rows_per_page);
	nulls[3] = th.rows_per_page < 0;
	reltuples = ac_reltuples(cfg.current);
	values[4] = Int64GetDatum((int64) reltuples);
	nulls[4] = reltuples < 0;
	eligible = ac_eligible_estimate(&cfg);
	values[5] = Int64GetDatum(eligible);
	nulls[5] = eligible < 0;
	reltuples = ac_reltuples(cfg.archive);
	values[6] = Int64GetDatum((int64) reltuples);
	nulls[6] = reltuples < 0;

	result = heap_form_tuple(tupdesc, values, nulls);
	PG_RETURN_DATUM(HeapTupleGetDatum(result));
}
