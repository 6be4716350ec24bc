/*-------------------------------------------------------------------------
 *
 * cluster_index.c
 *		Finding a table's index in its cluster key's order: a valid btree
 *		index whose leading key columns are the cluster columns, in that
 *		order, ascending, on plain columns and without a predicate.  A
 *		partitioned table registered with mode => 'partitioned' needs one,
 *		and each of its leaves has it (PostgreSQL creates it on every
 *		partition): a pass reads a leaf's rows in its order.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/index.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_index.h"
#include "nodes/pg_list.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "base/cluster_index.h"

/* Is this index in the order of these columns of its table? */
static bool
ac_index_in_cluster_order(Relation index, Relation rel, char **cluster_by, int ncluster)
{
	Form_pg_index ix = index->rd_index;
	int			i;

	if (index->rd_rel->relam != BTREE_AM_OID || !ix->indisvalid || !ix->indisready ||
		!ix->indislive || ix->indnkeyatts < ncluster ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL) ||
		!heap_attisnull(index->rd_indextuple, Anum_pg_index_indexprs, NULL))
		return false;
	for (i = 0; i < ncluster; i++)
	{
		AttrNumber	attno = ix->indkey.values[i];

		if (attno <= 0 ||
			strcmp(NameStr(TupleDescAttr(RelationGetDescr(rel), attno - 1)->attname),
				   cluster_by[i]) != 0 ||
			(index->rd_indoption[i] & INDOPTION_DESC) != 0 ||
			(index->rd_indoption[i] & INDOPTION_NULLS_FIRST) != 0)
			return false;
	}
	return true;
}

/*
 * The OID of rel's index in the order of its columns cluster_by[] (the
 * smallest OID of them), or InvalidOid.  rel is open and locked.
 */
Oid
ac_cluster_index(Relation rel, char **cluster_by, int ncluster)
{
	List	   *indexes = RelationGetIndexList(rel);
	Oid			result = InvalidOid;
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Oid			indexid = lfirst_oid(lc);
		Relation	index = index_open(indexid, AccessShareLock);

		if (ac_index_in_cluster_order(index, rel, cluster_by, ncluster) &&
			(!OidIsValid(result) || indexid < result))
			result = indexid;
		index_close(index, AccessShareLock);
	}
	list_free(indexes);
	return result;
}
