/*-------------------------------------------------------------------------
 *
 * planner.c
 *		A look-up by one key of a registered table, planned without its
 *		archive: the planner hooks.
 *
 *		Every query on a registered table is planned over both tiers: in
 *		table mode the planner expands <t>'s inheritance (it opens
 *		<t>_archive and its indexes and builds their paths), in view mode the
 *		view's UNION ALL; a look-up by id then costs about three times a plain
 *		table's planning (docs/design/prune-archive.md).  When the statement's
 *		quals fix the whole key of a unique index that holds across the
 *		tiers, with equalities whose other side reads no column of the table
 *		(a constant, a parameter, an uncorrelated sub-select), the archive can
 *		wait until run time: a snapshot that sees the key in the first tier
 *		sees no archived row with it.  So planner_hook asks probe_table.c
 *		(a SELECT of <t> in table mode) and probe_view.c (a SELECT, UPDATE
 *		or DELETE through the view) whether the query qualifies, and if so
 *		plans it over the first tier alone (inheritance off, or the view's
 *		current branch only); set_rel_pathlist_hook then wraps each path of
 *		that tier in the custom scan of probe_scan.c, which probes the
 *		archive's index on a miss.  A cursor declared in SQL or PL/pgSQL is
 *		planned over both tiers, each with its own scan (also without
 *		tier_lookup.c's custom scan), so that WHERE CURRENT OF finds its
 *		row.  Nothing changes with archive_cluster.tier_lookup off.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/extensible.h"
#include "nodes/plannodes.h"
#include "optimizer/paths.h"
#include "parser/parsetree.h"
#include "optimizer/planner.h"

#include "compat.h"
#include "base/guc.h"
#include "base/util.h"
#include "plan/probe.h"
#include "table/tier_lookup.h"

/* a cursor declared in SQL or PL/pgSQL, which WHERE CURRENT OF may name */
#define AC_CURSOR_OPTIONS (CURSOR_OPT_FAST_PLAN | CURSOR_OPT_SCROLL | CURSOR_OPT_NO_SCROLL | \
						   CURSOR_OPT_HOLD | CURSOR_OPT_BINARY)

static planner_hook_type prev_planner = NULL;
static set_rel_pathlist_hook_type prev_set_rel_pathlist = NULL;

/* the decision for the query being planned (NULL: none) */
static AcProbeTarget *ac_probe_target = NULL;

/*
 * Walk plan: a scan of relation first (range table of stmt) is allowed only
 * under the probe.
 */
static void
ac_probe_walk(Plan *plan, PlannedStmt *stmt, Oid first, bool under)
{
	ListCell   *lc;
	List	   *children = NIL;

	if (plan == NULL)
		return;
	check_stack_depth();
	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_SampleScan:
		case T_IndexScan:
		case T_IndexOnlyScan:
		case T_BitmapHeapScan:
		case T_TidScan:
		case T_TidRangeScan:
		case T_ForeignScan:
		case T_CustomScan:
			{
				Index		scanrelid = ((Scan *) plan)->scanrelid;

				if (IsA(plan, CustomScan) &&
					((CustomScan *) plan)->methods == &ac_probe_scan_methods)
					under = true;
				else if (!under && scanrelid > 0 &&
						 rt_fetch(scanrelid, stmt->rtable)->rtekind == RTE_RELATION &&
						 rt_fetch(scanrelid, stmt->rtable)->relid == first)
					elog(ERROR, "archive_cluster: relation %u is read without its archive", first);
				if (IsA(plan, CustomScan))
					children = ((CustomScan *) plan)->custom_plans;
				break;
			}
		case T_Append:
			children = ((Append *) plan)->appendplans;
			break;
		case T_MergeAppend:
			children = ((MergeAppend *) plan)->mergeplans;
			break;
		case T_BitmapAnd:
			children = ((BitmapAnd *) plan)->bitmapplans;
			break;
		case T_BitmapOr:
			children = ((BitmapOr *) plan)->bitmapplans;
			break;
		case T_SubqueryScan:
			ac_probe_walk(((SubqueryScan *) plan)->subplan, stmt, first, under);
			break;
		default:
			break;
	}
	foreach(lc, children)
		ac_probe_walk(lfirst(lc), stmt, first, under);
	ac_probe_walk(plan->lefttree, stmt, first, under);
	ac_probe_walk(plan->righttree, stmt, first, under);
}

/*
 * The plan of a query planned without the archive: its first tier was
 * wrapped (or proven empty), and no scan of it escapes the probe (as a
 * path another planner hook added would).  An error rather than rows lost.
 */
static void
ac_probe_check_plan(PlannedStmt *stmt, const AcProbeTarget *t)
{
	ListCell   *lc;

	if (!t->seen)
		elog(ERROR, "archive_cluster: relation %u was planned without its archive and without its probe",
			 t->first);
	ac_probe_walk(stmt->planTree, stmt, t->first, false);
	foreach(lc, stmt->subplans)
		ac_probe_walk(lfirst(lc), stmt, t->first, false);
}

static PlannedStmt *
ac_probe_planner(AC_PLANNER_PARAMS)
{
	AcProbeTarget target;
	AcProbeTarget *save = ac_probe_target;
	bool		save_allowed = ac_lookup_allowed;
	bool		cursor = (cursorOptions & AC_CURSOR_OPTIONS) != 0;
	PlannedStmt *result;

	ac_probe_target = NULL;
	target.parse = NULL;
	/*
	 * A cursor's plan reads both tiers, each with its own scan: WHERE CURRENT
	 * OF finds its row in the scan of the first tier or of the archive.
	 */
	ac_lookup_allowed = !cursor;
	PG_TRY();
	{
		if (archive_cluster_tier_lookup && !cursor &&
			(ac_probe_table_target(parse, &target) || ac_probe_view_target(parse, &target)))
		{
			target.parse = parse;
			target.seen = false;
			ac_probe_target = &target;
		}
		else
			target.check_index = InvalidOid;
		result = prev_planner ? prev_planner(AC_PLANNER_ARGS) :
			standard_planner(AC_PLANNER_ARGS);
	}
	PG_FINALLY();
	{
		ac_probe_target = save;
		ac_lookup_allowed = save_allowed;
	}
	PG_END_TRY();

	/* never a plan that reads the first tier alone without the probe */
	if (target.parse == parse)
	{
		ac_probe_check_plan(result, &target);
		/* tests: a run may commit between this planning and the execution */
		if (OidIsValid(target.check_index))
			ac_pause_point("pruned", 6);
	}
	return result;
}

/* The first tier's relation in the query being planned gets the probe. */
static void
ac_probe_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	AcProbeTarget *t = ac_probe_target;

	if (prev_set_rel_pathlist)
		prev_set_rel_pathlist(root, rel, rti, rte);
	if (t == NULL || root->parse != t->parse || rte->rtekind != RTE_RELATION ||
		rte->relid != t->first || t->seen)
		return;
	/* (the target's query reads the first tier once, at its top level) */
	t->seen = true;
	if (!IS_DUMMY_REL(rel))
		ac_probe_wrap_paths(root, rel, t);
}

/* Install the planner hooks and the custom scan (in every session). */
void
ac_probe_install(void)
{
	ac_probe_scan_register();
	prev_planner = planner_hook;
	planner_hook = ac_probe_planner;
	prev_set_rel_pathlist = set_rel_pathlist_hook;
	set_rel_pathlist_hook = ac_probe_rel_pathlist;
}
