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
#include "access/xact.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "utils/rel.h"

#include "plan/probe.h"
#include "table/guard_indexes.h"
#include "table/key_range.h"
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

/*
 * Is the archive <t>'s only child, without children of its own, with guards
 * on both tiers?  (Kept if so: a new child of either invalidates the entry.)
 */
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

			ok = ac_guard_present(archive) && !archive->rd_rel->relhassubclass;
			if (ok)
			{
				List	   *guards = ac_guard_indexes(archive);
				ListCell   *lc;

				e->probe_arc_guard = InvalidOid;
				foreach(lc, guards)
					if (!OidIsValid(e->probe_arc_guard) || lfirst_oid(lc) < e->probe_arc_guard)
						e->probe_arc_guard = lfirst_oid(lc);
			}
			table_close(archive, AccessShareLock);
		}
		e->probe_tiers = ok;
	}
	return e->probe_tiers;
}

/*
 * The value that clause "column = value" gives the key column of pair col,
 * for UPDATE and DELETE: a constant, or a parameter fixed for this plan,
 * not NULL, of the index column's type.  False if none.
 */
static bool
ac_probe_key_value(Node *clause, AcUniquePair *pair, int col, ParamListInfo params,
				   Datum *value)
{
	Node	   *v;

	if (ac_probe_equality(clause, 1, pair->opfamilies[col], pair->opcintypes[col], &v,
						  NULL) != pair->attnos[col] ||
		exprType(v) != pair->opcintypes[col])
		return false;
	if (IsA(v, Const) && !((Const *) v)->constisnull)
	{
		*value = ((Const *) v)->constvalue;
		return true;
	}
	if (IsA(v, Param) && ((Param *) v)->paramkind == PARAM_EXTERN && params != NULL &&
		params->paramFetch == NULL && ((Param *) v)->paramid > 0 &&
		((Param *) v)->paramid <= params->numParams)
	{
		ParamExternData *prm = &params->params[((Param *) v)->paramid - 1];

		if ((prm->pflags & PARAM_FLAG_CONST) && !prm->isnull && prm->ptype == exprType(v))
		{
			*value = prm->value;
			return true;
		}
	}
	return false;
}

/*
 * An UPDATE or DELETE of <t> whose key (pair) is beyond every key of the
 * archive, as the archive's cached largest key says now (key_range.c)?
 * Not under SERIALIZABLE (no predicate lock on the archive), for a key whose
 * archive index came after the archive's guard (the guard's notice of a
 * replicated row precedes its entries), nor for a table whose rows a scan
 * would return rebuilt (a dropped or "missing" column: the row's ctid).
 */
static bool
ac_probe_beyond(Relation rel, AcUniqueEntry *e, AcUniquePair *pair, List *conjuncts,
				ParamListInfo params)
{
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	TupleDesc	desc = RelationGetDescr(rel);
	int			i;

	if (IsolationIsSerializable() || pair->range == NULL ||
		!OidIsValid(e->probe_arc_guard) || pair->other > e->probe_arc_guard)
		return false;
	for (i = 0; i < desc->natts; i++)
		if (TupleDescAttr(desc, i)->attisdropped || TupleDescAttr(desc, i)->atthasmissing)
			return false;
	for (i = 0; i < pair->nkeys; i++)
	{
		ListCell   *lc;
		bool		found = false;

		foreach(lc, conjuncts)
			if ((found = ac_probe_key_value(lfirst(lc), pair, i, params, &values[i])))
				break;
		if (!found)
			return false;
		isnull[i] = false;
	}
	return ac_key_range_beyond(pair->range, values, isnull);
}

bool
ac_probe_table_target(Query *parse, ParamListInfo params, AcProbeTarget *target)
{
	RangeTblEntry *rte;
	Relation	rel;
	AcUniqueEntry *e;
	List	   *conjuncts;
	bool		dml;
	bool		ok = false;
	int			p;

	dml = parse->commandType == CMD_UPDATE || parse->commandType == CMD_DELETE;
	if ((parse->commandType != CMD_SELECT && !dml) || parse->utilityStmt != NULL ||
		parse->rowMarks != NIL || parse->cteList != NIL || parse->setOperations != NULL ||
		parse->hasModifyingCTE || list_length(parse->rtable) != 1 ||
		(dml && (parse->resultRelation != 1 || parse->onConflict != NULL)) ||
		parse->jointree == NULL || list_length(parse->jointree->fromlist) != 1 ||
		!IsA(linitial(parse->jointree->fromlist), RangeTblRef) ||
		((RangeTblRef *) linitial(parse->jointree->fromlist))->rtindex != 1 ||
		!ac_probe_quals_ok(parse->jointree->quals, 1))
		return false;
	rte = linitial_node(RangeTblEntry, parse->rtable);
	if (rte->rtekind != RTE_RELATION || !rte->inh || rte->relkind != RELKIND_RELATION ||
		rte->tablesample != NULL || rte->securityQuals != NIL)
		return false;

	/*
	 * (The registry's own queries, planned while looking, are of catalogs;
	 * no registry without the extension, whose access method the guards
	 * are.)
	 */
	if (rte->relid < FirstNormalObjectId || ac_probe_looking || !OidIsValid(ac_guard_am()))
		return false;

	/* locked by the parser or the plan cache */
	rel = table_open(rte->relid, NoLock);
	if (!rel->rd_rel->relhassubclass ||
		(constraint_exclusion == CONSTRAINT_EXCLUSION_ON && rel->rd_att->constr != NULL &&
		 rel->rd_att->constr->num_check > 0))
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
	if (e->parent != rte->relid || OidIsValid(e->missing) || !OidIsValid(e->other) ||
		!ac_probe_tiers_ok(rel, e))
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
		if (ok && dml)
			ok = ac_probe_beyond(rel, e, pair, conjuncts, params);
		if (ok)
		{
			target->first = rte->relid;
			target->archive = e->other;
			target->archive_index = pair->other;
			target->check_index = dml ? pair->own : InvalidOid;
			target->nkeys = pair->nkeys;
			memcpy(target->attnos, pair->attnos, sizeof(AttrNumber) * pair->nkeys);
			memcpy(target->opfamilies, pair->opfamilies, sizeof(Oid) * pair->nkeys);
			memcpy(target->opcintypes, pair->opcintypes, sizeof(Oid) * pair->nkeys);
		}
	}
	ok = ok && !ac_probe_reads_sysattr(parse) &&
		ac_probe_references(parse, rte->relid) == 1 &&
		ac_probe_references(parse, e->other) == 0;
	if (ok)
		rte->inh = false;
out:
	table_close(rel, NoLock);
	return ok;
}
