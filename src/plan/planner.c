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
 *		archive's index on a miss.  Nothing changes with
 *		archive_cluster.tier_lookup off.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "optimizer/paths.h"
#include "optimizer/planner.h"

#include "compat.h"
#include "base/guc.h"
#include "base/util.h"
#include "plan/probe.h"

static planner_hook_type prev_planner = NULL;
static set_rel_pathlist_hook_type prev_set_rel_pathlist = NULL;

/* the decision for the query being planned (NULL: none) */
static AcProbeTarget *ac_probe_target = NULL;

static PlannedStmt *
ac_probe_planner(AC_PLANNER_PARAMS)
{
	AcProbeTarget target;
	AcProbeTarget *save = ac_probe_target;
	PlannedStmt *result;

	ac_probe_target = NULL;
	target.parse = NULL;
	PG_TRY();
	{
		if (archive_cluster_tier_lookup &&
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
