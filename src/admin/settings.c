/*-------------------------------------------------------------------------
 *
 * settings.c
 *		The checks of a registered table's settings, shared by
 *		archive_cluster_register(), the registration of a partitioned table
 *		(register_partitioned.c) and archive_cluster_alter(): the cluster
 *		and age columns, batch_rows, hot_window.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type_d.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "archive_cluster.h"
#include "base/guc.h"
#include "admin/settings.h"

/* Error out unless the named column can serve as a cluster or age column. */
AttrNumber
ac_check_column(Relation rel, const char *colname, const char *role)
{
	AttrNumber	attnum = get_attnum(RelationGetRelid(rel), colname);
	Form_pg_attribute att;

	if (attnum == InvalidAttrNumber)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						colname, RelationGetRelationName(rel)),
				 errhint("Column names in %s are taken exactly as stored: case-sensitive and unquoted.",
						 role)));
	if (attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot use system column \"%s\" in %s", colname, role)));
	att = TupleDescAttr(RelationGetDescr(rel), attnum - 1);
	if (!att->attnotnull)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("column \"%s\" of relation \"%s\" must be NOT NULL",
						colname, RelationGetRelationName(rel)),
				 errhint("Add the constraint with ALTER TABLE ... ALTER COLUMN ... SET NOT NULL.")));
	return attnum;
}

/*
 * The names of a cluster_by argument into cluster_by[] (AC_MAX_CLUSTER_COLS
 * of them at most), each once; returns how many.
 */
int
ac_parse_cluster_by(ArrayType *arr, char **cluster_by)
{
	Datum	   *elems;
	bool	   *elemnulls;
	int			ncluster;
	int			i,
				j;

	if (ARR_NDIM(arr) > 1)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cluster_by must be a one-dimensional array")));
	deconstruct_array(arr, NAMEOID, NAMEDATALEN, false, TYPALIGN_CHAR,
					  &elems, &elemnulls, &ncluster);
	if (ncluster < 1 || ncluster > AC_MAX_CLUSTER_COLS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cluster_by must name between 1 and %d columns", AC_MAX_CLUSTER_COLS)));
	for (i = 0; i < ncluster; i++)
	{
		if (elemnulls[i])
			ereport(ERROR,
					(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
					 errmsg("cluster_by must not contain NULL")));
		cluster_by[i] = pstrdup(NameStr(*DatumGetName(elems[i])));
		for (j = 0; j < i; j++)
			if (strcmp(cluster_by[i], cluster_by[j]) == 0)
				ereport(ERROR,
						(errcode(ERRCODE_DUPLICATE_COLUMN),
						 errmsg("column \"%s\" appears twice in cluster_by", cluster_by[i])));
	}
	return ncluster;
}

/* Each cluster_by column exists in rel, is NOT NULL and sortable. */
void
ac_check_cluster_columns(Relation rel, char **cluster_by, int ncluster)
{
	int			i;

	for (i = 0; i < ncluster; i++)
	{
		AttrNumber	attnum = ac_check_column(rel, cluster_by[i], "cluster_by");
		Oid			typid = TupleDescAttr(RelationGetDescr(rel), attnum - 1)->atttypid;

		if (!OidIsValid(lookup_type_cache(typid, TYPECACHE_LT_OPR)->lt_opr))
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_FUNCTION),
					 errmsg("column \"%s\" of type %s has no default btree ordering",
							cluster_by[i], format_type_be(typid)),
					 errhint("cluster_by columns must be of types that can be sorted, such as integer, text or uuid.")));
	}
}

/* A batch_rows argument: between 1 and AC_MAX_BATCH_ROWS; hint: how to go back to automatic. */
void
ac_check_batch_rows(int64 batch_rows, const char *hint)
{
	if (batch_rows < 1 || batch_rows > AC_MAX_BATCH_ROWS)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("batch_rows must be between 1 and " INT64_FORMAT, AC_MAX_BATCH_ROWS),
				 errhint("%s", hint)));
}

/* A hot_window argument: not negative. */
void
ac_check_hot_window(Interval *hot_window)
{
	Interval	zero;

	memset(&zero, 0, sizeof(zero));
	if (DatumGetInt32(DirectFunctionCall2(interval_cmp, IntervalPGetDatum(hot_window),
										  IntervalPGetDatum(&zero))) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("hot_window must not be negative")));
}

/* Error out unless the named column can serve as the age column. */
void
ac_check_age_column(Relation rel, const char *age_column)
{
	Oid			agetype;

	agetype = getBaseType(TupleDescAttr(RelationGetDescr(rel),
										ac_check_column(rel, age_column, "age_column") - 1)->atttypid);
	if (agetype != TIMESTAMPOID && agetype != TIMESTAMPTZOID)
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("age column \"%s\" must be of type timestamp or timestamptz",
						age_column),
				 errdetail("It is of type %s.", format_type_be(agetype))));
}
