/*-------------------------------------------------------------------------
 *
 * partitioned.c
 *		Reading and writing archive_cluster_partitioned (the partitioned
 *		tables registered with mode => 'partitioned') and
 *		archive_cluster_leaves (what the passes did to each leaf partition:
 *		how often, where the last one stopped when it gave way).  These
 *		tables hold positions in the users' tables (a cluster column's
 *		value), so only the extension's owner reads them; every statement
 *		here runs as that owner, fixed and schema-qualified, after the
 *		caller's rights on the table concerned have been checked.  The
 *		readers connect to SPI themselves and return memory of the caller's
 *		context.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/namespace.h"
#include "catalog/pg_type_d.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "registry/config.h"
#include "registry/partitioned.h"

/*
 * Are the tables of partitioned tables there: not in a database whose
 * extension is still at 1.0.  The caller is connected to SPI.
 */
bool
ac_partitioned_available(void)
{
	return OidIsValid(get_relname_relid("archive_cluster_leaves", ac_extension_schema()));
}

/* Run a read of these tables as the extension's owner, with the latest snapshot. */
static uint64
ac_partitioned_query(const char *sql, int nargs, Oid *argtypes, Datum *values)
{
	uint64		n;

	PushActiveSnapshot(GetLatestSnapshot());
	n = ac_exec_as_extension_owner(sql, nargs, argtypes, values, NULL, SPI_OK_SELECT);
	PopActiveSnapshot();
	return n;
}

/*
 * The registration of partitioned table "relation" into *cfg, allocated in
 * the caller's memory context; false when it is not registered (or the
 * extension is at 1.0).
 */
bool
ac_load_partitioned(Oid relation, AcPartitionedConfig *cfg)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	bool		found = false;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	values[0] = ObjectIdGetDatum(relation);
	if (ac_partitioned_available() &&
		ac_partitioned_query(psprintf("SELECT cluster_by, age_column, hot_window FROM %s"
									  " WHERE relation OPERATOR(pg_catalog.=) $1",
									  ac_extension_object("archive_cluster_partitioned")),
							 1, argtypes, values) == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		MemoryContext oldcxt = MemoryContextSwitchTo(caller);
		Datum	   *elems;
		int			nelems;
		bool		isnull;
		int			i;

		memset(cfg, 0, sizeof(*cfg));
		cfg->relation = relation;
		deconstruct_array(DatumGetArrayTypeP(SPI_getbinval(tup, desc, 1, &isnull)),
						  NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR, &elems, NULL, &nelems);
		if (nelems < 1 || nelems > AC_MAX_CLUSTER_COLS)
			elog(ERROR, "invalid cluster_by in archive_cluster_partitioned");
		cfg->ncluster = nelems;
		for (i = 0; i < nelems; i++)
			cfg->cluster_by[i] = pstrdup(NameStr(*DatumGetName(elems[i])));
		cfg->age_column = pstrdup(NameStr(*DatumGetName(SPI_getbinval(tup, desc, 2, &isnull))));
		cfg->hot_window = *DatumGetIntervalP(SPI_getbinval(tup, desc, 3, &isnull));
		MemoryContextSwitchTo(oldcxt);
		found = true;
	}
	SPI_finish();
	return found;
}

/* The registered partitioned tables (OIDs), in the caller's memory context. */
List *
ac_partitioned_relations(void)
{
	MemoryContext caller = CurrentMemoryContext;
	List	   *result = NIL;
	uint64		n = 0;
	uint64		i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (ac_partitioned_available())
		n = ac_partitioned_query(psprintf("SELECT relation FROM %s ORDER BY relation",
										  ac_extension_object("archive_cluster_partitioned")),
								 0, NULL, NULL);
	for (i = 0; i < n; i++)
	{
		bool		isnull;
		Oid			relid = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
														   SPI_tuptable->tupdesc, 1, &isnull));
		MemoryContext oldcxt = MemoryContextSwitchTo(caller);

		result = lappend_oid(result, relid);
		MemoryContextSwitchTo(oldcxt);
	}
	SPI_finish();
	return result;
}

/* Record a registration; the caller is connected to SPI. */
void
ac_record_partitioned(Oid relation, ArrayType *cluster_by, const char *age_column,
					  Interval *hot_window, Oid caller_id)
{
	Oid			argtypes[5] = {REGCLASSOID, NAMEARRAYOID, NAMEOID, INTERVALOID, NAMEOID};
	Datum		values[5];
	NameData	age;
	NameData	caller;

	values[0] = ObjectIdGetDatum(relation);
	values[1] = PointerGetDatum(cluster_by);
	namestrcpy(&age, age_column);
	values[2] = NameGetDatum(&age);
	values[3] = IntervalPGetDatum(hot_window);
	namestrcpy(&caller, GetUserNameFromId(caller_id, false));
	values[4] = NameGetDatum(&caller);
	ac_exec_as_extension_owner(psprintf("INSERT INTO %s (relation, cluster_by, age_column,"
										" hot_window, registered_by) VALUES ($1, $2, $3, $4, $5)",
										ac_extension_object("archive_cluster_partitioned")),
							   5, argtypes, values, NULL, SPI_OK_INSERT);
}

/* Forget a registration and its leaves' state; the caller is connected to SPI. */
void
ac_forget_partitioned(Oid relation)
{
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];

	values[0] = ObjectIdGetDatum(relation);
	ac_exec_as_extension_owner(psprintf("DELETE FROM %s WHERE relation OPERATOR(pg_catalog.=) $1",
										ac_extension_object("archive_cluster_partitioned")),
							   1, argtypes, values, NULL, SPI_OK_DELETE);
}

/* What the passes did to this leaf, in the caller's memory context. */
void
ac_leaf_state(Oid leaf, AcLeafState *state)
{
	MemoryContext caller = CurrentMemoryContext;
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];

	memset(state, 0, sizeof(*state));
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	values[0] = ObjectIdGetDatum(leaf);
	if (ac_partitioned_available() &&
		ac_partitioned_query(psprintf("SELECT passes, rows_rewritten, last_pass_at, settled_at,"
									  " settled_blocks, resume_at, checked_at FROM %s"
									  " WHERE leaf OPERATOR(pg_catalog.=) $1",
									  ac_extension_object("archive_cluster_leaves")),
							 1, argtypes, values) == 1)
	{
		HeapTuple	tup = SPI_tuptable->vals[0];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		Datum		d;

		state->found = true;
		state->passes = DatumGetInt32(SPI_getbinval(tup, desc, 1, &isnull));
		state->rows_rewritten = DatumGetInt64(SPI_getbinval(tup, desc, 2, &isnull));
		d = SPI_getbinval(tup, desc, 3, &isnull);
		state->last_pass_at = isnull ? 0 : DatumGetTimestampTz(d);
		d = SPI_getbinval(tup, desc, 4, &isnull);
		state->settled_at = isnull ? 0 : DatumGetTimestampTz(d);
		d = SPI_getbinval(tup, desc, 5, &isnull);
		state->settled_blocks = isnull ? 0 : DatumGetInt64(d);
		d = SPI_getbinval(tup, desc, 7, &isnull);
		state->checked_at = isnull ? 0 : DatumGetTimestampTz(d);
		d = SPI_getbinval(tup, desc, 6, &isnull);
		if (!isnull)
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(caller);

			state->resume_at = DatumGetByteaPCopy(d);
			MemoryContextSwitchTo(oldcxt);
		}
	}
	SPI_finish();
}

/*
 * Record that a settled leaf was found not due after the VACUUM of
 * vacuumed_at: it is not measured again until another VACUUM (the mark a
 * stopped tail pass left goes).  A row another transaction holds (a pass of
 * the leaf, another check) is skipped, not waited for: the leaf is only
 * measured again.
 */
void
ac_leaf_checked(Oid leaf, TimestampTz vacuumed_at)
{
	Oid			argtypes[2] = {REGCLASSOID, TIMESTAMPTZOID};
	Datum		values[2];

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	values[0] = ObjectIdGetDatum(leaf);
	values[1] = TimestampTzGetDatum(vacuumed_at);
	ac_exec_as_extension_owner(psprintf("UPDATE %s l SET checked_at = $2, resume_at = NULL"
										" FROM (SELECT leaf FROM %s WHERE leaf OPERATOR(pg_catalog.=) $1"
										" FOR UPDATE SKIP LOCKED) free WHERE l.leaf OPERATOR(pg_catalog.=) free.leaf",
										ac_extension_object("archive_cluster_leaves"),
										ac_extension_object("archive_cluster_leaves")),
							   2, argtypes, values, NULL, SPI_OK_UPDATE);
	SPI_finish();
}

/*
 * Record a pass over a leaf of "relation": the rows it rewrote; settled if
 * it went through to the end (with the leaf's pages then), else the value
 * it stopped at (resume_at, opaque to this file; NULL to start again from
 * the beginning).
 */
void
ac_leaf_record(Oid relation, Oid leaf, int64 rows, bool settled, BlockNumber blocks,
			   bytea *resume_at)
{
	Oid			argtypes[6] = {REGCLASSOID, REGCLASSOID, INT8OID, BOOLOID, INT8OID, BYTEAOID};
	Datum		values[6];
	char		nulls[7] = "      ";

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	values[0] = ObjectIdGetDatum(leaf);
	values[1] = ObjectIdGetDatum(relation);
	values[2] = Int64GetDatum(rows);
	values[3] = BoolGetDatum(settled);
	values[4] = Int64GetDatum((int64) blocks);
	values[5] = PointerGetDatum(resume_at);
	if (resume_at == NULL)
		nulls[5] = 'n';
	ac_exec_as_extension_owner(psprintf("INSERT INTO %s AS l (leaf, relation, resume_at,"
										" passes, rows_rewritten, last_pass_at, settled_at, settled_blocks)"
										" VALUES ($1, $2, $6, 1, $3, pg_catalog.clock_timestamp(),"
										"  CASE WHEN $4 THEN pg_catalog.clock_timestamp() END, CASE WHEN $4 THEN $5 END)"
										" ON CONFLICT (leaf) DO UPDATE SET relation = $2,"
										"  resume_at = $6,"
										"  passes = l.passes OPERATOR(pg_catalog.+) 1,"
										"  rows_rewritten = l.rows_rewritten OPERATOR(pg_catalog.+) $3,"
										"  last_pass_at = pg_catalog.clock_timestamp(),"
										"  settled_at = CASE WHEN $4 THEN pg_catalog.clock_timestamp() ELSE l.settled_at END,"
										"  settled_blocks = CASE WHEN $4 THEN $5 ELSE l.settled_blocks END",
										ac_extension_object("archive_cluster_leaves")),
							   6, argtypes, values, nulls, SPI_OK_INSERT);
	SPI_finish();
}
