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
 *		Row locks keep both tiers (the archive must be a row-mark target;
 *		tier_lookup.c spares its scan when the row is in ONLY <t>), and so
 *		do UPDATE and DELETE (the archive must be a result relation) but by
 *		a constant key beyond every key of the archive: those are planned
 *		over ONLY <t>, the key checked again before the first row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/table.h"
#include "access/transam.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
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
			table_close(archive, NoLock);
		}
		e->probe_tiers = ok;
	}
	return e->probe_tiers;
}

/*
 * The value that clause "column = constant" gives the key column of pair
 * col, for UPDATE and DELETE, as a Const of the index column's type: a
 * constant not NULL of that type, or of a narrower integer type (widened).
 * Not a parameter: a custom plan planned so would be cheaper than the
 * generic one, and the plan cache would then plan every execution.
 */
static Const *
ac_probe_key_value(Node *clause, AcUniquePair *pair, int col)
{
	Node	   *v;
	Const	   *c;
	Oid			type = pair->opcintypes[col];

	if (ac_probe_equality(clause, 1, pair->opfamilies[col], type, &v, NULL) != pair->attnos[col] ||
		!IsA(v, Const) || ((Const *) v)->constisnull)
		return NULL;
	c = (Const *) v;
	if (c->consttype == type)
		return copyObject(c);
	if (type == INT8OID && c->consttype == INT4OID)
		return makeConst(INT8OID, -1, InvalidOid, 8,
						 Int64GetDatum((int64) DatumGetInt32(c->constvalue)), false, FLOAT8PASSBYVAL);
	if (type == INT8OID && c->consttype == INT2OID)
		return makeConst(INT8OID, -1, InvalidOid, 8,
						 Int64GetDatum((int64) DatumGetInt16(c->constvalue)), false, FLOAT8PASSBYVAL);
	if (type == INT4OID && c->consttype == INT2OID)
		return makeConst(INT4OID, -1, InvalidOid, 4,
						 Int32GetDatum((int32) DatumGetInt16(c->constvalue)), false, true);
	return NULL;
}

/*
 * An UPDATE or DELETE of <t> whose key (pair) is beyond every key of the
 * archive, as the archive's cached largest key says now (key_range.c)?  If
 * so, target's check_values get the key, checked again before the
 * statement's first row (probe_scan.c).
 * Not under SERIALIZABLE (no predicate lock on the archive), for a key whose
 * archive index came after the archive's guard (the guard's notice of a
 * replicated row precedes its entries), nor for a table whose rows a scan
 * would return rebuilt (a dropped or "missing" column: the row's ctid).
 */
static bool
ac_probe_beyond(Relation rel, AcUniqueEntry *e, AcUniquePair *pair, List *conjuncts,
				AcProbeTarget *target)
{
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	TupleDesc	desc = RelationGetDescr(rel);
	List	   *consts = NIL;
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
		Const	   *c = NULL;

		foreach(lc, conjuncts)
			if ((c = ac_probe_key_value(lfirst(lc), pair, i)) != NULL)
				break;
		if (c == NULL)
			return false;
		values[i] = c->constvalue;
		isnull[i] = false;
		consts = lappend(consts, c);
	}
	if (!ac_key_range_beyond(pair->range, values, isnull))
		return false;
	target->check_values = consts;
	return true;
}

bool
ac_probe_table_target(Query *parse, AcProbeTarget *target)
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
		target->check_values = NIL;
		if (ok && dml)
			ok = ac_probe_beyond(rel, e, pair, conjuncts, target);
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
		ac_probe_references(parse, rte->relid, 1, e->other, 0);
	if (ok)
		rte->inh = false;
out:
	table_close(rel, NoLock);
	return ok;
}
