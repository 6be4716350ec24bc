/*-------------------------------------------------------------------------
 *
 * guard_indexes.c
 *		Table mode: which indexes of a tier are guard indexes
 *		(archive_cluster_guard, tier_guard.c), whether a tier has a usable
 *		one, and leaving them out of the writers that move rows between the
 *		tiers (runs, compactions, unarchiving), whose keys are unique
 *		already.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "commands/defrem.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "table/guard_indexes.h"

/* The guard access method's OID, InvalidOid if the extension is not there. */
Oid
ac_guard_am(void)
{
	return get_index_am_oid(AC_GUARD_AM, true);
}

/* Is index indexid a guard? */
bool
ac_is_guard(Oid indexid, Oid am)
{
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(indexid));
	bool		guard = false;

	if (HeapTupleIsValid(tuple))
	{
		guard = ((Form_pg_class) GETSTRUCT(tuple))->relam == am;
		ReleaseSysCache(tuple);
	}
	return guard;
}

/* Is guard indexid valid, ready and live (not being dropped concurrently)? */
static bool
ac_guard_usable(Oid indexid)
{
	HeapTuple	tuple = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexid));
	bool		usable = false;

	if (HeapTupleIsValid(tuple))
	{
		Form_pg_index index = (Form_pg_index) GETSTRUCT(tuple);

		usable = index->indisvalid && index->indisready && index->indislive;
		ReleaseSysCache(tuple);
	}
	return usable;
}

/* Does tier rel have a guard index, ready to be told of new rows? */
bool
ac_guard_present(Relation rel)
{
	List	   *guards = ac_guard_indexes(rel);
	ListCell   *lc;
	bool		found = false;

	foreach(lc, guards)
	{
		if (ac_guard_usable(lfirst_oid(lc)))
		{
			found = true;
			break;
		}
	}
	list_free(guards);
	return found;
}

/* The guard indexes of rel, usable or not (unregistration drops them all). */
List *
ac_guard_indexes(Relation rel)
{
	Oid			am = ac_guard_am();
	List	   *indexes = RelationGetIndexList(rel);
	List	   *guards = NIL;
	ListCell   *lc;

	foreach(lc, indexes)
		if (OidIsValid(am) && ac_is_guard(lfirst_oid(lc), am))
			guards = lappend_oid(guards, lfirst_oid(lc));
	list_free(indexes);
	return guards;
}

/*
 * Leave guard indexes out of rri's open indexes (ExecOpenIndices): for
 * writers that move rows between the tiers, whose keys are unique already.
 */
void
ac_guard_leave_out(ResultRelInfo *rri)
{
	Oid			am = ac_guard_am();
	int			i;
	int			n = 0;

	for (i = 0; i < rri->ri_NumIndices; i++)
	{
		Relation	index = rri->ri_IndexRelationDescs[i];

		if (OidIsValid(am) && index->rd_rel->relam == am)
		{
			index_close(index, RowExclusiveLock);
			continue;
		}
		rri->ri_IndexRelationDescs[n] = index;
		rri->ri_IndexRelationInfo[n] = rri->ri_IndexRelationInfo[i];
		n++;
	}
	rri->ri_NumIndices = n;
}
