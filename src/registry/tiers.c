/*-------------------------------------------------------------------------
 *
 * tiers.c
 *		Which column of <t>_current and of <t>_archive each column of a
 *		registered view is.
 *
 *		The view reads its tables' columns by attribute number (its query
 *		holds Vars), and a column of a tier can be renamed under it.  So the
 *		view's trigger and the mover never match columns by name: they take
 *		the attribute numbers from the view's own query, and check each
 *		against the catalog (the column exists and has the view column's
 *		type), refusing with an error a view whose query no longer has the
 *		shape registration gave it.  Rows then go where the view reads them
 *		from, and a Datum is only ever stored in a column of its own type.
 *
 *		In table mode there is no view: <t>_archive is an inheritance child
 *		of <t>, whose columns PostgreSQL keeps the same by name and type
 *		(renames and type changes of <t> reach the child), so they are
 *		matched by name (ac_child_columns).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "nodes/parsenodes.h"
#include "nodes/primnodes.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "registry/tiers.h"

static void
ac_tiers_mismatch(Relation view, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("columns of view \"%s\" no longer match its tables",
					RelationGetRelationName(view)),
			 errdetail_internal("%s", detail),
			 errhint("Undo the change to the view or its tables, or unregister and register the table again.")));
}

/*
 * The attribute numbers of relation "tier" that the branch "rtindex" of the
 * view's UNION ALL reads, one per view column, into atts[].
 */
static void
ac_branch_columns(Relation view, Query *query, int rtindex, Oid tier, AttrNumber *atts)
{
	TupleDesc	desc = RelationGetDescr(view);
	RangeTblEntry *rte = rt_fetch(rtindex, query->rtable);
	Query	   *branch;
	ListCell   *lc;
	int			i = 0;

	if (rte->rtekind != RTE_SUBQUERY || rte->subquery == NULL)
		ac_tiers_mismatch(view, "A branch of the view is not a query.");
	branch = rte->subquery;
	if (branch->setOperations != NULL || list_length(branch->rtable) != 1 ||
		rt_fetch(1, branch->rtable)->rtekind != RTE_RELATION ||
		rt_fetch(1, branch->rtable)->relid != tier)
		ac_tiers_mismatch(view, psprintf("A branch of the view does not read table \"%s\" alone.",
										 get_rel_name(tier)));

	foreach(lc, branch->targetList)
	{
		TargetEntry *tle = lfirst(lc);
		Var		   *var = (Var *) tle->expr;
		Form_pg_attribute vatt;
		HeapTuple	tup;
		Form_pg_attribute tatt;
		bool		ok;

		if (tle->resjunk)
			continue;
		if (i >= desc->natts)
			ac_tiers_mismatch(view, "The view has more columns than its description.");
		vatt = TupleDescAttr(desc, i);
		if (!IsA(var, Var) || var->varno != 1 || var->varlevelsup != 0 || var->varattno <= 0)
			ac_tiers_mismatch(view, psprintf("Column \"%s\" of the view is not a column of table \"%s\".",
											 NameStr(vatt->attname), get_rel_name(tier)));

		tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(tier), Int16GetDatum(var->varattno));
		if (!HeapTupleIsValid(tup))
			ac_tiers_mismatch(view, psprintf("Column %d of table \"%s\" does not exist.",
											 var->varattno, get_rel_name(tier)));
		tatt = (Form_pg_attribute) GETSTRUCT(tup);
		ok = !tatt->attisdropped && !vatt->attisdropped &&
			tatt->atttypid == vatt->atttypid && var->vartype == vatt->atttypid &&
			tatt->atttypmod == var->vartypmod && tatt->attcollation == var->varcollid;
		ReleaseSysCache(tup);
		if (!ok)
			ac_tiers_mismatch(view, psprintf("Column \"%s\" of the view (type %s) does not match column %d of table \"%s\".",
											 NameStr(vatt->attname),
											 format_type_be(vatt->atttypid),
											 var->varattno, get_rel_name(tier)));
		if (ac_view_column_of(atts, i, var->varattno) >= 0)
			ac_tiers_mismatch(view, psprintf("Column %d of table \"%s\" is read twice by the view.",
											 var->varattno, get_rel_name(tier)));
		atts[i++] = var->varattno;
	}
	if (i != desc->natts)
		ac_tiers_mismatch(view, "The view has fewer columns than its description.");
}

/*
 * Fill cur[] and arc[] (one entry per column of the view, natts of them)
 * with the attribute numbers of the view's columns in current and archive.
 * The view must be "SELECT ... FROM current UNION ALL SELECT ... FROM
 * archive", as registration created it, each column a plain column of the
 * view's type.
 */
void
ac_tier_columns(Relation view, Oid current, Oid archive, AttrNumber *cur, AttrNumber *arc)
{
	Query	   *query = get_view_query(view);
	SetOperationStmt *setop = (SetOperationStmt *) query->setOperations;

	if (setop == NULL || !IsA(setop, SetOperationStmt) || setop->op != SETOP_UNION ||
		!setop->all || !IsA(setop->larg, RangeTblRef) || !IsA(setop->rarg, RangeTblRef))
		ac_tiers_mismatch(view, "The view is no longer a UNION ALL of its two tables.");
	ac_branch_columns(view, query, ((RangeTblRef *) setop->larg)->rtindex, current, cur);
	ac_branch_columns(view, query, ((RangeTblRef *) setop->rarg)->rtindex, archive, arc);
}

/* The view column (0-based) that reads attribute attnum of a tier, or -1. */
int
ac_view_column_of(const AttrNumber *atts, int natts, AttrNumber attnum)
{
	int			i;

	for (i = 0; i < natts; i++)
		if (atts[i] == attnum)
			return i;
	return -1;
}

/*
 * A column of current that the view does not read (added to the tables
 * after registration): the column of archive with the same name, type,
 * typmod and collation that the view does not read either, or
 * InvalidAttrNumber.
 */
AttrNumber
ac_unviewed_counterpart(Relation cur, Relation arc, const AttrNumber *arcatt, int natts,
						AttrNumber curattnum)
{
	Form_pg_attribute catt = TupleDescAttr(RelationGetDescr(cur), curattnum - 1);
	AttrNumber	a = get_attnum(RelationGetRelid(arc), NameStr(catt->attname));
	Form_pg_attribute aatt;

	if (a <= 0 || ac_view_column_of(arcatt, natts, a) >= 0)
		return InvalidAttrNumber;
	aatt = TupleDescAttr(RelationGetDescr(arc), a - 1);
	if (aatt->atttypid != catt->atttypid || aatt->atttypmod != catt->atttypmod ||
		aatt->attcollation != catt->attcollation)
		return InvalidAttrNumber;
	return a;
}

/* The view column (0-based) named name, or -1. */
int
ac_view_column_named(Relation view, const char *name)
{
	TupleDesc	desc = RelationGetDescr(view);
	int			i;

	for (i = 0; i < desc->natts; i++)
		if (!TupleDescAttr(desc, i)->attisdropped &&
			strcmp(NameStr(TupleDescAttr(desc, i)->attname), name) == 0)
			return i;
	return -1;
}

/*
 * Table mode: <t> and its inheritance child <t>_archive have the same
 * columns by name (inheritance keeps them so, whatever their numbers).
 * Fill cur[] and arc[], one entry per attribute of <t> (natts of them), as
 * ac_tier_columns does for a view: cur[i] is i + 1, arc[i] the child's
 * column of that name; both 0 for a dropped column.
 */
void
ac_child_columns(Relation parent, Relation archive, AttrNumber *cur, AttrNumber *arc)
{
	TupleDesc	desc = RelationGetDescr(parent);
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		cur[i] = arc[i] = 0;
		if (att->attisdropped)
			continue;
		cur[i] = i + 1;
		arc[i] = get_attnum(RelationGetRelid(archive), NameStr(att->attname));
		if (arc[i] <= 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("column \"%s\" of \"%s\" has no counterpart in \"%s\"",
							NameStr(att->attname), RelationGetRelationName(parent),
							RelationGetRelationName(archive)),
					 errhint("\"%s\" must stay an inheritance child of \"%s\"; unregister and register the table again.",
							 RelationGetRelationName(archive), RelationGetRelationName(parent))));
	}
}

/*
 * Either mode: *cur and *arc, palloc'd, one entry per column of "view" (in
 * table mode <t> itself), the attribute numbers of that column in current
 * and in archive (ac_tier_columns, ac_child_columns).
 */
void
ac_tiers_columns(Relation view, bool table_mode, Oid current, Relation archive,
				 AttrNumber **cur, AttrNumber **arc)
{
	int			natts = RelationGetDescr(view)->natts;

	*cur = palloc(sizeof(AttrNumber) * natts);
	*arc = palloc(sizeof(AttrNumber) * natts);
	if (table_mode)
		ac_child_columns(view, archive, *cur, *arc);
	else
		ac_tier_columns(view, current, RelationGetRelid(archive), *cur, *arc);
}

/* The view column (0-based) of a configured column name; error if gone. */
int
ac_view_column_required(Relation view, const char *name)
{
	int			col = ac_view_column_named(view, name);

	if (col < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of view \"%s\" does not exist",
						name, RelationGetRelationName(view)),
				 errhint("The cluster_by and age_column of a registered table must stay columns of its view; rename the column back.")));
	return col;
}
