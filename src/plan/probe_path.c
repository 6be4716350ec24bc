/*-------------------------------------------------------------------------
 *
 * probe_path.c
 *		The custom scan ArchiveClusterProbe, planned: every path of the first
 *		tier of a query that qualifies (planner.c) wrapped in the custom
 *		path, and its plan: a scan of the first tier whose wrapped plan
 *		returns whole rows, with the key's values and operators for the
 *		probe (probe_scan.c executes it).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/pg_type.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "compat.h"
#include "plan/probe.h"

static Plan *ac_probe_plan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
						   List *tlist, List *clauses, List *custom_plans);

static const CustomPathMethods ac_probe_path_methods = {
	.CustomName = AC_PROBE_NAME,
	.PlanCustomPath = ac_probe_plan,
};

/* The custom path over path, a path of the first tier. */
static Path *
ac_probe_path(Path *path, List *private)
{
	CustomPath *cpath = makeNode(CustomPath);

	cpath->path = *path;
	cpath->path.type = T_CustomPath;
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = false;
	cpath->path.parallel_workers = 0;
	cpath->path.pathkeys = NIL;
	cpath->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	cpath->custom_paths = list_make1(path);
	cpath->custom_private = private;
	cpath->methods = &ac_probe_path_methods;
	return &cpath->path;
}

/*
 * The first tier's relation gets the custom path over each of its paths that
 * returns whole rows (an index-only scan becoming an index scan), and no
 * other path.  The target travels in the paths' custom_private: a list of
 * archive, archive_index, check_index, nkeys, then per key column its attno,
 * opfamily, opcintype; and the check's key values (UPDATE, DELETE).
 */
void
ac_probe_wrap_paths(PlannerInfo *root, RelOptInfo *rel, const AcProbeTarget *t)
{
	List	   *paths = NIL;
	List	   *private;
	ListCell   *lc;
	int			i;

	private = list_make4_oid(t->archive, t->archive_index, t->check_index, (Oid) t->nkeys);
	for (i = 0; i < t->nkeys; i++)
		private = lappend_oid(lappend_oid(lappend_oid(private, (Oid) t->attnos[i]),
										  t->opfamilies[i]),
							  t->opcintypes[i]);
	private = list_make2(private, copyObject(t->check_values));
	foreach(lc, rel->pathlist)
	{
		Path	   *path = (Path *) lfirst(lc);

		if (path->param_info != NULL)
			continue;
		if (IsA(path, IndexPath))
		{
			IndexPath  *ipath = (IndexPath *) path;

			if (ipath->indexorderbys != NIL)
				continue;
			if (path->pathtype == T_IndexOnlyScan)
			{
				ipath = makeNode(IndexPath);
				memcpy(ipath, path, sizeof(IndexPath));
				ipath->path.pathtype = T_IndexScan;
				path = &ipath->path;
			}
		}
		else if (!IsA(path, BitmapHeapPath) && path->pathtype != T_SeqScan)
			continue;
		paths = lappend(paths, ac_probe_path(path, private));
	}
	if (paths == NIL)
		paths = list_make1(ac_probe_path(create_seqscan_path(root, rel, NULL, 0), private));
	rel->pathlist = paths;
	rel->partial_pathlist = NIL;
}

/*
 * The key values, in index column order, from the first tier's restriction
 * clauses (relation varno), their operators appended to *opnos; NIL if a
 * column is not found (the probe then reads the archive's heap).
 */
static List *
ac_probe_keys(List *clauses, Index varno, List *private, List **opnos)
{
	int			nkeys = (int) lfourth_oid(private);
	List	   *values = NIL;
	int			i;

	for (i = 0; i < nkeys; i++)
	{
		AttrNumber	attno = (AttrNumber) list_nth_oid(private, 4 + 3 * i);
		Oid			opfamily = list_nth_oid(private, 5 + 3 * i);
		Oid			opcintype = list_nth_oid(private, 6 + 3 * i);
		Node	   *value = NULL;
		Oid			opno = InvalidOid;
		ListCell   *lc;

		foreach(lc, clauses)
		{
			Node	   *clause = (Node *) lfirst_node(RestrictInfo, lc)->clause;

			if (ac_probe_equality(clause, varno, opfamily, opcintype, &value, &opno) == attno)
				break;
			value = NULL;
		}
		if (value == NULL)
		{
			list_free(*opnos);
			*opnos = NIL;
			return NIL;
		}
		values = lappend(values, copyObject(value));
		*opnos = lappend_oid(*opnos, opno);
	}
	return values;
}

/*
 * The target list of a scan of r (range table index varno) that returns its
 * rows whole, as they are stored: build_physical_tlist() gives up on a
 * dropped column, here a NULL.
 */
static List *
ac_probe_whole_rows(Relation r, Index varno)
{
	TupleDesc	desc = RelationGetDescr(r);
	List	   *tlist = NIL;
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		Expr	   *expr;

		if (att->attisdropped)
			expr = (Expr *) makeNullConst(INT4OID, -1, InvalidOid);
		else
			expr = (Expr *) makeVar(varno, att->attnum, att->atttypid, att->atttypmod,
									att->attcollation, 0);
		tlist = lappend(tlist, makeTargetEntry(expr, i + 1, NULL, false));
	}
	return tlist;
}

/*
 * PlanCustomPath: a scan of the first tier (its scan tuple that tier's row)
 * whose wrapped plan returns the tier's rows whole; the quals are applied
 * to archived rows only (the wrapped plan applies them to its own).
 */
static Plan *
ac_probe_plan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *first = linitial(custom_plans);
	List	   *private = linitial(best_path->custom_private);
	List	   *check_values = lsecond(best_path->custom_private);
	Oid			archive = linitial_oid(private);
	Oid			check_index = lthird_oid(private);
	List	   *opnos = NIL;
	Relation	r;

	/*
	 * A gating Result over the scan (a qual without the row's columns, as
	 * equivalence classes derive from "id = 5 AND id = $1") goes: the same
	 * gate is above this node, and the scan's own slots keep the row's ctid.
	 */
	while (IsA(first, Result) && first->lefttree != NULL &&
		   ((Result *) first)->resconstantqual != NULL)
		first = first->lefttree;
	custom_plans = list_make1(first);

	/* whole rows from the scan (the planner holds the first tier's lock) */
	r = table_open(planner_rt_fetch(rel->relid, root)->relid, NoLock);
	first->targetlist = ac_probe_whole_rows(r, rel->relid);
	table_close(r, NoLock);

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(clauses, false);
	cscan->scan.scanrelid = rel->relid;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	if (OidIsValid(check_index))
	{
		/* the key the planner found beyond the archive's, compared by "=" */
		int			nkeys = (int) lfourth_oid(private);

		for (int i = 0; i < nkeys; i++)
		{
			Oid			opcintype = list_nth_oid(private, 6 + 3 * i);

			opnos = lappend_oid(opnos, get_opfamily_member(list_nth_oid(private, 5 + 3 * i),
														   opcintype, opcintype,
														   BTEqualStrategyNumber));
		}
		cscan->custom_exprs = check_values;
	}
	else
		cscan->custom_exprs = ac_probe_keys(clauses, rel->relid, private, &opnos);
	cscan->custom_private = list_concat(list_make3_oid(archive, lsecond_oid(private), check_index),
										opnos);
	cscan->methods = &ac_probe_scan_methods;

	/* a change to the archive (its indexes, say) invalidates the plan */
	root->glob->relationOids = lappend_oid(root->glob->relationOids, archive);
	return &cscan->scan.plan;
}
