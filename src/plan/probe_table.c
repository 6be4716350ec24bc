/*-------------------------------------------------------------------------
 *
 * probe_table.c
 *		Table mode: may a SELECT of <t> be planned without <t>_archive?
 *
 *		Yes when it is a SELECT of <t> alone (no row locks, no other
 *		relation, no row security, no sample, no system column but tableoid)
 *		whose WHERE fixes every key column of a unique index that holds
 *		across the tiers (tier_unique.c: its pair valid, guards on both
 *		tiers) with equalities free of <t>'s columns, and the archive is
 *		<t>'s only inheritance child.  The query's <t> then loses its
 *		inheritance (rte->inh), and the scan of ONLY <t> gets the probe.
 *		UPDATE, DELETE and row locks keep both tiers: there the archive must
 *		be a result relation or a row-mark target (tier_lookup.c spares its
 *		scan when the row is in ONLY <t>).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/transam.h"
#include "catalog/pg_inherits.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "utils/rel.h"

#include "plan/probe.h"
#include "table/guard_indexes.h"
#include "table/tier_unique_cache.h"

static bool ac_probe_looking = false;	/* in ac_unique_entry_get() */

/* Does a conjunct of quals fix column attno of relation 1 for this pair column? */
static bool
ac_probe_fixed(List *conjuncts, AcUniquePair *pair, int col)
{
	ListCell   *lc;

	foreach(lc, conjuncts)
		if (ac_probe_equality(lfirst(lc), 1, pair->opfamilies[col], pair->opcintypes[col],
							  NULL, NULL) == pair->attnos[col])
			return true;
	return false;
}

/* Is the archive <t>'s only child, with guards on both tiers?  (Kept if so.) */
static bool
ac_probe_tiers_ok(Relation rel, AcUniqueEntry *e)
{
	if (!e->probe_tiers)
	{
		List	   *children = find_inheritance_children(RelationGetRelid(rel), NoLock);
		bool		ok = false;

		if (list_length(children) == 1 && linitial_oid(children) == e->other &&
			ac_guard_present(rel))
		{
			Relation	archive = table_open(e->other, AccessShareLock);

			ok = ac_guard_present(archive);
			table_close(archive, AccessShareLock);
		}
		e->probe_tiers = ok;
	}
	return e->probe_tiers;
}

bool
ac_probe_table_target(Query *parse, AcProbeTarget *target)
{
	RangeTblEntry *rte;
	Relation	rel;
	AcUniqueEntry *e;
	List	   *conjuncts;
	bool		ok = false;
	int			p;

	if (parse->commandType != CMD_SELECT || parse->utilityStmt != NULL ||
		parse->rowMarks != NIL || parse->cteList != NIL || parse->setOperations != NULL ||
		parse->hasModifyingCTE || list_length(parse->rtable) != 1 ||
		parse->jointree == NULL || list_length(parse->jointree->fromlist) != 1 ||
		!IsA(linitial(parse->jointree->fromlist), RangeTblRef) ||
		((RangeTblRef *) linitial(parse->jointree->fromlist))->rtindex != 1 ||
		!ac_probe_quals_ok(parse->jointree->quals, 1))
		return false;
	rte = linitial_node(RangeTblEntry, parse->rtable);
	if (rte->rtekind != RTE_RELATION || !rte->inh || rte->relkind != RELKIND_RELATION ||
		rte->tablesample != NULL || rte->securityQuals != NIL)
		return false;
	/* (the registry's own queries, planned while looking, are of catalogs) */
	if (rte->relid < FirstNormalObjectId || ac_probe_looking)
		return false;

	/* locked by the parser or the plan cache */
	rel = table_open(rte->relid, NoLock);
	if (!rel->rd_rel->relhassubclass)
	{
		table_close(rel, NoLock);
		return false;
	}
	ac_probe_looking = true;
	PG_TRY();
	{
		e = ac_unique_entry_get(rel);
	}
	PG_FINALLY();
	{
		ac_probe_looking = false;
	}
	PG_END_TRY();
	if (e->parent != rte->relid || OidIsValid(e->missing) || !OidIsValid(e->other))
		goto out;

	conjuncts = make_ands_implicit((Expr *) parse->jointree->quals);
	for (p = 0; p < e->npairs && !ok; p++)
	{
		AcUniquePair *pair = &e->pairs[p];
		int			i;

		if (!pair->valid || !pair->simple || pair->nulls_equal)
			continue;
		ok = true;
		for (i = 0; i < pair->nkeys && ok; i++)
			ok = ac_probe_fixed(conjuncts, pair, i);
		if (ok)
		{
			target->first = rte->relid;
			target->archive = e->other;
			target->archive_index = pair->other;
			target->nkeys = pair->nkeys;
			memcpy(target->attnos, pair->attnos, sizeof(AttrNumber) * pair->nkeys);
			memcpy(target->opfamilies, pair->opfamilies, sizeof(Oid) * pair->nkeys);
			memcpy(target->opcintypes, pair->opcintypes, sizeof(Oid) * pair->nkeys);
		}
	}
	ok = ok && ac_probe_tiers_ok(rel, e) && !ac_probe_reads_sysattr(parse);
	if (ok)
		rte->inh = false;
out:
	table_close(rel, NoLock);
	return ok;
}
