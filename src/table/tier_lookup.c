/*-------------------------------------------------------------------------
 *
 * tier_lookup.c
 *		Table mode: a look-up by one key of a unique index stops at the tier
 *		that holds the row.
 *
 *		A query on a table <t> registered in table mode reads both tiers:
 *		an Append of ONLY <t> and <t>_archive.  When its quals fix every key
 *		column of a unique index with equality, at most one row matches, and
 *		every unique index holds across the tiers (tier_unique.c): once the
 *		first tier's scan has returned a row, the other tier holds none that
 *		the same snapshot sees.  Scanning it anyway costs a plain table's
 *		look-up a second index descent and its executor set-up.
 *
 *		So a planner hook puts the Append's two children under one custom
 *		scan, the Append's only child (which the planner then removes): it
 *		returns the first tier's rows, then the second tier's, unless the
 *		first returned one; it sets the second tier's scan up only when it
 *		has to run it.  Its rows are its children's as they are (their
 *		target lists are the same, column for column, as the Append's
 *		children's always are).  The seed's OLTP statements ("select one",
 *		"update": a recent row by id) then read ONLY <t> alone, as they
 *		would read the plain table.
 *
 *		The second tier's table and index are held open from the start, as
 *		its scan would hold them, so that they count as in use by the query
 *		(DDL of the same session refused while a cursor is open).
 *
 *		The second tier is always read in an EvalPlanQual recheck and under
 *		SERIALIZABLE (whose predicate locks stay those of a full read), and
 *		EXPLAIN sets both scans up to show them.  Nothing changes for a key
 *		in the archive (both tiers are read, as before), for a look-up the
 *		quals do not pin to one key (id = ANY (...), a range, a non-unique
 *		index), or for a table not registered in table mode, and nothing
 *		with archive_cluster.tier_lookup off.  The premise is that no key is
 *		in both tiers: rows written under session_replication_role = replica
 *		are not checked across the tiers, and a duplicate written so shows
 *		only from the first tier in such a look-up.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/extensible.h"
#include "nodes/pathnodes.h"
#include "optimizer/paths.h"
#include "parser/parsetree.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "compat.h"
#include "base/guc.h"
#include "table/guard_indexes.h"
#include "table/tier_lookup.h"
#include "table/tier_unique.h"

#define AC_LOOKUP_NAME "ArchiveClusterTier"

/* Executor state: the two tiers' scans. */
typedef struct AcLookupState
{
	CustomScanState css;
	int			eflags;
	PlanState  *tiers[2];		/* the second is NULL until it runs */
	Relation	held_index;		/* the second tier's index, held open */
	int			current;		/* the tier being read; 2: done */
	bool		found;			/* the first tier returned a row */
	int64		skipped;		/* second tiers skipped, for EXPLAIN ANALYZE */
} AcLookupState;

static set_rel_pathlist_hook_type prev_set_rel_pathlist = NULL;

static Plan *ac_lookup_plan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
							List *tlist, List *clauses, List *custom_plans);
static Node *ac_lookup_create_state(CustomScan *cscan);
static void ac_lookup_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *ac_lookup_exec(CustomScanState *node);
static void ac_lookup_end(CustomScanState *node);
static void ac_lookup_rescan(CustomScanState *node);
static void ac_lookup_explain(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomPathMethods ac_lookup_path_methods = {
	.CustomName = AC_LOOKUP_NAME,
	.PlanCustomPath = ac_lookup_plan,
};

static const CustomScanMethods ac_lookup_scan_methods = {
	.CustomName = AC_LOOKUP_NAME,
	.CreateCustomScanState = ac_lookup_create_state,
};

static const CustomExecMethods ac_lookup_exec_methods = {
	.CustomName = AC_LOOKUP_NAME,
	.BeginCustomScan = ac_lookup_begin,
	.ExecCustomScan = ac_lookup_exec,
	.EndCustomScan = ac_lookup_end,
	.ReScanCustomScan = ac_lookup_rescan,
	.ExplainCustomScan = ac_lookup_explain,
};

/* ---- planning ---- */

/* Is clause "indexed column = value" for a btree index column of opfamily? */
static bool
ac_is_equality(Expr *clause, Oid opfamily)
{
	Oid			opno;
	Oid			commutator;

	if (!IsA(clause, OpExpr) || list_length(((OpExpr *) clause)->args) != 2)
		return false;
	opno = ((OpExpr *) clause)->opno;
	if (get_op_opfamily_strategy(opno, opfamily) == BTEqualStrategyNumber)
		return true;
	/* "value = column", matched by its commutator */
	commutator = get_commutator(opno);
	return OidIsValid(commutator) &&
		get_op_opfamily_strategy(commutator, opfamily) == BTEqualStrategyNumber;
}

/*
 * Does index path ipath find at most one row: a unique btree index,
 * enforced at once, without predicate, each key column fixed by an
 * equality?
 */
static bool
ac_one_key(IndexPath *ipath)
{
	IndexOptInfo *index = ipath->indexinfo;
	bool		fixed[INDEX_MAX_KEYS] = {false};
	ListCell   *lc;
	int			i;

	if (index->relam != BTREE_AM_OID || !index->unique || !index->immediate ||
		index->indpred != NIL)
		return false;
	foreach(lc, ipath->indexclauses)
	{
		IndexClause *iclause = lfirst_node(IndexClause, lc);
		ListCell   *lq;

		if (iclause->lossy || iclause->indexcol >= index->nkeycolumns)
			continue;
		foreach(lq, iclause->indexquals)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lq);

			if (ac_is_equality(rinfo->clause, index->opfamily[iclause->indexcol]))
				fixed[iclause->indexcol] = true;
		}
	}
	for (i = 0; i < index->nkeycolumns; i++)
		if (!fixed[i])
			return false;
	return true;
}

/* Has the relation of a tier's path a guard index (the planner's list)? */
static bool
ac_rel_has_guard(RelOptInfo *rel, Oid guard_am)
{
	ListCell   *lc;

	foreach(lc, rel->indexlist)
		if (lfirst_node(IndexOptInfo, lc)->relam == guard_am)
			return true;
	return false;
}

/*
 * Are the Append's two children the tiers of a table registered in table
 * mode, each with a usable guard?  Then may the second skip its scan once
 * the first, a look-up by one key of unique index indexid, has returned a
 * row: does that index hold across the tiers?  (indexid InvalidOid: the
 * tiers only.)
 */
static bool
ac_lookup_applies(PlannerInfo *root, Path *first, Path *second, Oid indexid)
{
	Oid			guard_am = get_index_am_oid(AC_GUARD_AM, true);
	Oid			secondoid;
	Relation	rel;
	Relation	other;
	bool		applies;

	if (!OidIsValid(guard_am) || !ac_rel_has_guard(first->parent, guard_am) ||
		!ac_rel_has_guard(second->parent, guard_am))
		return false;
	secondoid = planner_rt_fetch(second->parent->relid, root)->relid;
	/* the planner holds both tiers' locks */
	rel = table_open(planner_rt_fetch(first->parent->relid, root)->relid, NoLock);
	other = table_open(secondoid, NoLock);
	applies = ac_guard_present(rel) && ac_guard_present(other) &&
		ac_unique_holds_across(rel, indexid, secondoid);
	table_close(other, NoLock);
	table_close(rel, NoLock);
	return applies;
}

/*
 * The custom path over the two tiers' paths, a path of the first tier's
 * relation: so its plan emits the first tier's columns, as the Append's
 * first child did, and no Var of the Append's own (a row identity of an
 * UPDATE) reaches it.
 */
static Path *
ac_lookup_path(Path *first, Path *second)
{
	CustomPath *cpath = makeNode(CustomPath);

	/* the first tier's relation, target and parameters */
	cpath->path = *first;
	cpath->path.type = T_CustomPath;
	cpath->path.pathtype = T_CustomScan;
	cpath->path.parallel_aware = false;
	cpath->path.parallel_safe = first->parallel_safe && second->parallel_safe;
	cpath->path.pathkeys = NIL;
	cpath->path.rows = first->rows + second->rows;
	cpath->path.total_cost = first->total_cost + second->total_cost;
	ac_sum_disabled_nodes(&cpath->path, first, second);
	cpath->flags = 0;
	cpath->custom_paths = list_make2(first, second);
	cpath->methods = &ac_lookup_path_methods;
	return &cpath->path;
}

/*
 * May the planner use the look-up now?  Set by plan/planner.c's planner_hook
 * for each query it plans, but a cursor declared in SQL or PL/pgSQL: its
 * plan keeps both tiers' scans as they are, so that WHERE CURRENT OF finds
 * the cursor's row in the scan of <t> or of the archive.  False where that
 * hook did not run (another extension's planner_hook not calling it).
 */
bool		ac_lookup_allowed = false;

/*
 * set_rel_pathlist_hook: each plain Append of a table-mode table's two
 * tiers whose first child looks one key up (both children index scans) gets
 * the custom path as its only child; not in a cursor's plan.
 */
static void
ac_lookup_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	ListCell   *lc;

	if (prev_set_rel_pathlist)
		prev_set_rel_pathlist(root, rel, rti, rte);
	if (!archive_cluster_tier_lookup || !ac_lookup_allowed || rte->rtekind != RTE_RELATION ||
		!rte->inh || rel->reloptkind != RELOPT_BASEREL)
		return;
	foreach(lc, rel->pathlist)
	{
		AppendPath *append = (AppendPath *) lfirst(lc);
		Path	   *first;
		Path	   *second;

		if (!IsA(append, AppendPath) || append->path.parallel_aware ||
			list_length(append->subpaths) != 2 || append->first_partial_path != 2)
			continue;
		first = linitial(append->subpaths);
		second = lsecond(append->subpaths);
		if (!IsA(first, IndexPath) || !IsA(second, IndexPath) ||
			!ac_one_key((IndexPath *) first) ||
			!ac_lookup_applies(root, first, second,
							   ((IndexPath *) first)->indexinfo->indexoid))
			continue;
		append->subpaths = list_make1(ac_lookup_path(first, second));
		append->first_partial_path = 1;
		append->path.parallel_safe = linitial_node(CustomPath, append->subpaths)->path.parallel_safe;
	}
}

/*
 * PlanCustomPath: a scan without relation of its own, whose tuples are its
 * tiers' scans' tuples, as they are; those scans apply every qual.
 */
static Plan *
ac_lookup_plan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			   List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = NIL;
	cscan->scan.scanrelid = 0;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_scan_tlist = copyObject(tlist);
	cscan->methods = &ac_lookup_scan_methods;
	return &cscan->scan.plan;
}

/* ---- execution ---- */

static Node *
ac_lookup_create_state(CustomScan *cscan)
{
	AcLookupState *s = palloc0(sizeof(AcLookupState));

	NodeSetTag(s, T_CustomScanState);
	s->css.methods = &ac_lookup_exec_methods;
	return (Node *) s;
}

/* Set tier i's scan up, in the query's memory. */
static void
ac_lookup_start_tier(AcLookupState *s, int i)
{
	EState	   *estate = s->css.ss.ps.state;
	CustomScan *cscan = (CustomScan *) s->css.ss.ps.plan;
	MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);

	s->tiers[i] = ExecInitNode(list_nth(cscan->custom_plans, i), estate, s->eflags);
	s->css.custom_ps = lappend(s->css.custom_ps, s->tiers[i]);
	MemoryContextSwitchTo(old);
}

/*
 * The index scanned by plan, the second tier's (an index scan, perhaps under
 * a gating Result), and its relation's range table index; false if none.
 */
static bool
ac_plan_index(Plan *plan, Oid *indexid, Index *scanrelid)
{
	while (IsA(plan, Result) && plan->lefttree != NULL)
		plan = plan->lefttree;
	if (IsA(plan, IndexScan))
		*indexid = ((IndexScan *) plan)->indexid;
	else if (IsA(plan, IndexOnlyScan))
		*indexid = ((IndexOnlyScan *) plan)->indexid;
	else
		return false;
	*scanrelid = ((Scan *) plan)->scanrelid;
	return true;
}

static void
ac_lookup_begin(CustomScanState *node, EState *estate, int eflags)
{
	AcLookupState *s = (AcLookupState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	Oid			indexid;
	Index		scanrelid;

	s->eflags = eflags;

	/*
	 * The rows are the tiers' scans' own slots, of whatever kind: a parent
	 * must not take them for the virtual slots of this node's result.
	 */
	node->ss.ps.resultopsset = true;
	node->ss.ps.resultopsfixed = false;

	ac_lookup_start_tier(s, 0);
	/* EXPLAIN shows both scans; EXPLAIN ANALYZE a skipped one never executed */
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) || estate->es_instrument ||
		!ac_plan_index(lsecond(cscan->custom_plans), &indexid, &scanrelid))
	{
		ac_lookup_start_tier(s, 1);
		return;
	}

	/*
	 * The second tier's table and index are held open as its scan would hold
	 * them, so that they count as in use by this query (no DROP INDEX or
	 * TRUNCATE of them while a cursor is open, say).
	 */
	(void) ac_get_range_table_relation(estate, scanrelid);
	s->held_index = index_open(indexid, exec_rt_fetch(scanrelid, estate)->rellockmode);
}

/*
 * May the second tier be skipped?  When the first returned a row, except in
 * an EvalPlanQual recheck (each scan returns its row under recheck) and
 * under SERIALIZABLE (the second tier's scan takes its predicate locks).
 */
static bool
ac_lookup_skip(AcLookupState *s)
{
	return s->found && s->css.ss.ps.state->es_epq_active == NULL &&
		!IsolationIsSerializable();
}

static TupleTableSlot *
ac_lookup_exec(CustomScanState *node)
{
	AcLookupState *s = (AcLookupState *) node;
	TupleTableSlot *slot;

	if (s->current == 0)
	{
		slot = ExecProcNode(s->tiers[0]);
		if (!TupIsNull(slot))
		{
			s->found = true;
			return slot;
		}
		s->current = 1;
		if (ac_lookup_skip(s))
		{
			s->skipped++;
			s->current = 2;
		}
		else if (s->tiers[1] == NULL)
			ac_lookup_start_tier(s, 1);
	}
	if (s->current == 1)
	{
		slot = ExecProcNode(s->tiers[1]);
		if (!TupIsNull(slot))
			return slot;
		s->current = 2;
	}
	return ExecClearTuple(node->ss.ps.ps_ResultTupleSlot);
}

static void
ac_lookup_end(CustomScanState *node)
{
	AcLookupState *s = (AcLookupState *) node;
	int			i;

	for (i = 0; i < 2; i++)
		if (s->tiers[i])
			ExecEndNode(s->tiers[i]);
	if (s->held_index)
		index_close(s->held_index, NoLock);
}

static void
ac_lookup_rescan(CustomScanState *node)
{
	AcLookupState *s = (AcLookupState *) node;
	int			i;

	for (i = 0; i < 2; i++)
	{
		PlanState  *tier = s->tiers[i];

		if (tier == NULL)
			continue;
		if (node->ss.ps.chgParam != NULL)
			UpdateChangedParamSet(tier, node->ss.ps.chgParam);
		/* with changed parameters, the scan starts again when next run */
		if (tier->chgParam == NULL)
			ExecReScan(tier);
	}
	s->current = 0;
	s->found = false;
}

static void
ac_lookup_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	AcLookupState *s = (AcLookupState *) node;

	ExplainPropertyText("Tiers", "the second is skipped if the first returns the row", es);
	if (es->analyze)
		ExplainPropertyInteger("Skipped Scans", NULL, s->skipped, es);
	if (s->tiers[1] == NULL)
		ExplainPropertyText("Second Tier", "never set up", es);
}

/* Install the planner hook and the custom scan (in every session). */
void
ac_tier_lookup_install(void)
{
	RegisterCustomScanMethods(&ac_lookup_scan_methods);
	prev_set_rel_pathlist = set_rel_pathlist_hook;
	set_rel_pathlist_hook = ac_lookup_rel_pathlist;
}
