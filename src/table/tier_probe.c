/*-------------------------------------------------------------------------
 *
 * tier_probe.c
 *		Table mode: a SELECT by one key of a unique index is planned as on
 *		the plain table, and probes the archive only when the table's own
 *		rows have none.
 *
 *		A query on a table <t> registered in table mode is planned over both
 *		tiers: the planner expands the inheritance (it opens <t>_archive and
 *		its indexes, builds its paths, then the Append's), which costs a
 *		look-up by id about three times a plain table's planning
 *		(docs/design/prune-archive.md).  tier_lookup.c saves the second
 *		tier's execution, not its planning.
 *
 *		So a planner hook turns the inheritance off (rte->inh) for a SELECT
 *		of <t> alone whose WHERE fixes every key column of a unique index
 *		that holds across the tiers (tier_unique.c) with an equality whose
 *		other side reads no column of <t>: a constant, a parameter, an
 *		uncorrelated sub-select (the bench's "(SELECT last_value FROM
 *		t_id_seq) - :off").  Every path of <t>'s own rows is then wrapped in
 *		a custom scan, ArchiveClusterProbe, that returns the row those paths
 *		find; when they find none, it evaluates the key, looks it up in the
 *		archive's counterpart index with the statement's snapshot, and
 *		returns the archived row (as <t>'s row type, tableoid the
 *		archive's) if the query's quals accept it: exactly the rows the
 *		Append would return, since a snapshot that sees the key in ONLY <t>
 *		sees no archived row with it (the premise of tier_lookup.c).
 *
 *		Under SERIALIZABLE the archive is always probed, so that the read
 *		takes its predicate lock there as the Append's scan would.  The
 *		archive is locked (ACCESS SHARE) when first probed; the plan depends
 *		on it (a change to its indexes plans again).  Should the counterpart
 *		index be gone by then (concurrent DDL between planning and
 *		execution), the probe reads the archive's heap with the quals.
 *		Nothing is pruned for a query with row locks, more than one relation,
 *		row security, a sample, system columns other than tableoid, or with
 *		archive_cluster.tier_lookup off, nor for a table with another child.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/tupconvert.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/plancat.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "rewrite/rewriteManip.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "compat.h"
#include "base/guc.h"
#include "table/guard_indexes.h"
#include "table/tier_probe.h"
#include "table/tier_unique.h"
#include "table/tier_unique_cache.h"

#define AC_PROBE_NAME "ArchiveClusterProbe"

/* What the planner hook decided for the query being planned. */
typedef struct AcProbeTarget
{
	Query	   *parse;			/* the query whose <t> is no longer inherited */
	Oid			archive;		/* <t>_archive */
	Oid			index;			/* <t>'s unique index whose key the quals fix */
	int			nkeys;
	AttrNumber	attnos[INDEX_MAX_KEYS];
	Oid			opfamilies[INDEX_MAX_KEYS];
	Oid			opcintypes[INDEX_MAX_KEYS];
} AcProbeTarget;

static AcProbeTarget *ac_probe_target = NULL;
static bool ac_probe_looking = false;	/* in ac_unique_entry_get() */

/* Executor state. */
typedef struct AcProbeState
{
	CustomScanState css;
	PlanState  *first;			/* the scan of ONLY <t> */
	List	   *keys;			/* ExprStates of the key values */
	Oid			archiveid;
	Oid			indexid;		/* <t>'s index (plan) */
	Relation	archive;		/* opened at the first probe */
	Relation	aindex;			/* its counterpart index; NULL: heap scan */
	int			nkeys;
	Oid			opnos[INDEX_MAX_KEYS];	/* "column = value", from the plan */
	MemoryContext keycxt;		/* the key values of a probe */
	IndexScanDesc iscan;
	TableScanDesc hscan;
	TupleTableSlot *aslot;		/* archive rows */
	TupleTableSlot *cslot;		/* converted to <t>'s row type, if needed */
	TupleConversionMap *map;
	int			phase;			/* 0: <t>, 1: the archive, 2: done */
	bool		found;
	int64		probes;
} AcProbeState;

static planner_hook_type prev_planner = NULL;
static set_rel_pathlist_hook_type prev_set_rel_pathlist = NULL;

static Plan *ac_probe_plan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
						   List *tlist, List *clauses, List *custom_plans);
static Node *ac_probe_create_state(CustomScan *cscan);
static void ac_probe_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *ac_probe_exec(CustomScanState *node);
static void ac_probe_end(CustomScanState *node);
static void ac_probe_rescan(CustomScanState *node);
static void ac_probe_explain(CustomScanState *node, List *ancestors, ExplainState *es);

static const CustomPathMethods ac_probe_path_methods = {
	.CustomName = AC_PROBE_NAME,
	.PlanCustomPath = ac_probe_plan,
};

static const CustomScanMethods ac_probe_scan_methods = {
	.CustomName = AC_PROBE_NAME,
	.CreateCustomScanState = ac_probe_create_state,
};

static const CustomExecMethods ac_probe_exec_methods = {
	.CustomName = AC_PROBE_NAME,
	.BeginCustomScan = ac_probe_begin,
	.ExecCustomScan = ac_probe_exec,
	.EndCustomScan = ac_probe_end,
	.ReScanCustomScan = ac_probe_rescan,
	.ExplainCustomScan = ac_probe_explain,
};

/* ---- planning ---- */

/* The attribute of relation 1 that expr is (under a binary coercion), or 0. */
static AttrNumber
ac_probe_column(Node *expr)
{
	while (IsA(expr, RelabelType))
		expr = (Node *) ((RelabelType *) expr)->arg;
	if (IsA(expr, Var) && ((Var *) expr)->varno == 1 &&
		((Var *) expr)->varlevelsup == 0 && ((Var *) expr)->varattno > 0)
		return ((Var *) expr)->varattno;
	return 0;
}

/* May expr be a key value: computed once, free of the row's columns? */
static bool
ac_probe_value(Node *expr)
{
	return !contain_vars_of_level(expr, 0) && !contain_volatile_functions(expr) &&
		!expression_returns_set(expr);
}

/*
 * If clause is "column = value" (either way round) with an equality operator
 * of btree opfamily whose left type is opcintype (the index column's), the
 * column; else 0.  *value gets the other side, *opno the operator with the
 * column on its left.
 */
static AttrNumber
ac_probe_equality(Node *clause, Oid opfamily, Oid opcintype, Node **value, Oid *opno)
{
	OpExpr	   *op = (OpExpr *) clause;
	AttrNumber	att;
	Node	   *other;
	Oid			oper;
	int			strategy;
	Oid			lefttype;
	Oid			righttype;

	if (!IsA(clause, OpExpr) || list_length(op->args) != 2)
		return 0;
	if (OidIsValid(op->inputcollid) && !get_collation_isdeterministic(op->inputcollid))
		return 0;
	if ((att = ac_probe_column(linitial(op->args))) != 0)
	{
		other = lsecond(op->args);
		oper = op->opno;
	}
	else if ((att = ac_probe_column(lsecond(op->args))) != 0)
	{
		other = linitial(op->args);
		oper = get_commutator(op->opno);
	}
	else
		return 0;
	if (!OidIsValid(oper) || !ac_probe_value(other) || !op_in_opfamily(oper, opfamily))
		return 0;
	get_op_opfamily_properties(oper, opfamily, false, &strategy, &lefttype, &righttype);
	if (strategy != BTEqualStrategyNumber || lefttype != opcintype)
		return 0;
	if (value)
		*value = other;
	if (opno)
		*opno = oper;
	return att;
}

/* Does the tree read a system column other than tableoid? */
static bool
ac_probe_sysattr_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varattno < 0 &&
			((Var *) node)->varattno != TableOidAttributeNumber;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, ac_probe_sysattr_walker, context, 0);
	return expression_tree_walker(node, ac_probe_sysattr_walker, context);
}

/*
 * Is parse a SELECT that may read <t> without its archive?  Fills target
 * with the archive and the unique index whose key its quals fix.
 */
static bool
ac_probe_candidate(Query *parse, AcProbeTarget *target)
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
		parse->jointree->quals == NULL)
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

	/* a top-level AND; no conjunct without the row's columns (a gating qual) */
	conjuncts = make_ands_implicit((Expr *) parse->jointree->quals);
	{
		ListCell   *lc;

		foreach(lc, conjuncts)
			if (!contain_vars_of_level(lfirst(lc), 0))
				goto out;
	}
	for (p = 0; p < e->npairs && !ok; p++)
	{
		AcUniquePair *pair = &e->pairs[p];
		int			i;

		if (!pair->valid || !pair->simple || pair->nulls_equal)
			continue;
		ok = true;
		for (i = 0; i < pair->nkeys && ok; i++)
		{
			ListCell   *lc;

			ok = false;
			foreach(lc, conjuncts)
				if (ac_probe_equality(lfirst(lc), pair->opfamilies[i], pair->opcintypes[i],
									  NULL, NULL) == pair->attnos[i])
				{
					ok = true;
					break;
				}
		}
		if (ok)
		{
			target->archive = e->other;
			target->index = pair->own;
			target->nkeys = pair->nkeys;
			memcpy(target->attnos, pair->attnos, sizeof(AttrNumber) * pair->nkeys);
			memcpy(target->opfamilies, pair->opfamilies, sizeof(Oid) * pair->nkeys);
			memcpy(target->opcintypes, pair->opcintypes, sizeof(Oid) * pair->nkeys);
		}
	}
	if (!ok)
		goto out;

	/* the archive must be <t>'s only child, with guards on both tiers */
	if (!e->probe_tiers)
	{
		List	   *children = find_inheritance_children(rte->relid, NoLock);
		bool		tiers = false;

		if (list_length(children) == 1 && linitial_oid(children) == target->archive &&
			ac_guard_present(rel))
		{
			Relation	archive = table_open(target->archive, AccessShareLock);

			tiers = ac_guard_present(archive);
			table_close(archive, AccessShareLock);
		}
		e->probe_tiers = tiers;
	}
	ok = e->probe_tiers;
	if (ok)
		ok = !ac_probe_sysattr_walker((Node *) parse, NULL);
out:
	table_close(rel, NoLock);
	return ok;
}

/* planner_hook: a candidate SELECT is planned without the archive. */
static PlannedStmt *
ac_probe_planner(AC_PLANNER_PARAMS)
{
	AcProbeTarget target;
	AcProbeTarget *save = ac_probe_target;
	PlannedStmt *result;

	ac_probe_target = NULL;
	if (archive_cluster_tier_lookup && ac_probe_candidate(parse, &target))
	{
		target.parse = parse;
		linitial_node(RangeTblEntry, parse->rtable)->inh = false;
		ac_probe_target = &target;
	}
	PG_TRY();
	{
		result = prev_planner ? prev_planner(AC_PLANNER_ARGS) :
			standard_planner(AC_PLANNER_ARGS);
	}
	PG_FINALLY();
	{
		ac_probe_target = save;
	}
	PG_END_TRY();
	return result;
}

/* The custom path over path, a path of <t>'s own rows. */
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
 * set_rel_pathlist_hook: <t>, no longer inherited, gets the custom path over
 * each of its paths that returns whole rows (an index-only scan becoming an
 * index scan), and no other path.
 */
static void
ac_probe_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti, RangeTblEntry *rte)
{
	AcProbeTarget *t = ac_probe_target;
	List	   *paths = NIL;
	List	   *private;
	ListCell   *lc;

	if (prev_set_rel_pathlist)
		prev_set_rel_pathlist(root, rel, rti, rte);
	if (t == NULL || root->parse != t->parse || rti != 1 || rte->inh ||
		rel->reloptkind != RELOPT_BASEREL || IS_DUMMY_REL(rel))
		return;

	private = list_make2_oid(t->archive, t->index);
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
 * The key values, in index column order, from <t>'s restriction clauses, and
 * their operators appended to *opnos; NIL if a column is not found (the
 * probe then reads the archive's heap).
 */
static List *
ac_probe_keys(List *clauses, AcUniquePair *pair, List **opnos)
{
	List	   *values = NIL;
	int			i;

	for (i = 0; i < pair->nkeys; i++)
	{
		Node	   *value = NULL;
		Oid			opno = InvalidOid;
		ListCell   *lc;

		foreach(lc, clauses)
		{
			Node	   *clause = (Node *) lfirst_node(RestrictInfo, lc)->clause;

			if (ac_probe_equality(clause, pair->opfamilies[i], pair->opcintypes[i],
								  &value, &opno) == pair->attnos[i])
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
 * PlanCustomPath: a scan of <t> (its scan tuple <t>'s row) whose first plan
 * returns <t>'s own rows whole; the quals are applied to archived rows only
 * (the first plan applies them to its own).
 */
static Plan *
ac_probe_plan(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			  List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *first = linitial(custom_plans);
	Oid			archive = linitial_oid(best_path->custom_private);
	Oid			index = lsecond_oid(best_path->custom_private);
	AcUniqueEntry *e;
	List	   *keys = NIL;
	List	   *opnos = NIL;
	int			i;

	/* the key values, for the pair as the hook found it */
	{
		Relation	r = table_open(planner_rt_fetch(rel->relid, root)->relid, NoLock);

		first->targetlist = ac_probe_whole_rows(r, rel->relid);

		e = ac_unique_entry_get(r);
		for (i = 0; i < e->npairs; i++)
			if (e->pairs[i].own == index && e->pairs[i].simple)
			{
				keys = ac_probe_keys(clauses, &e->pairs[i], &opnos);
				break;
			}
		table_close(r, NoLock);
	}

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(clauses, false);
	cscan->scan.scanrelid = rel->relid;
	cscan->flags = best_path->flags;
	cscan->custom_plans = custom_plans;
	cscan->custom_exprs = keys;
	cscan->custom_private = list_concat(list_make2_oid(archive, index), opnos);
	cscan->methods = &ac_probe_scan_methods;

	/* a change to the archive (its indexes) invalidates the plan */
	root->glob->relationOids = lappend_oid(root->glob->relationOids, archive);
	return &cscan->scan.plan;
}

/* ---- execution ---- */

static Node *
ac_probe_create_state(CustomScan *cscan)
{
	AcProbeState *s = palloc0(sizeof(AcProbeState));

	NodeSetTag(s, T_CustomScanState);
	s->css.methods = &ac_probe_exec_methods;
	return (Node *) s;
}

/*
 * Open the archive and its counterpart index (ACCESS SHARE, as the Append's
 * scan would lock them), the slots for its rows, and the conversion to
 * <t>'s row type; no archive if it has been dropped since planning.
 */
static void
ac_probe_open(AcProbeState *s)
{
	EState	   *estate = s->css.ss.ps.state;
	Relation	rel = s->css.ss.ss_currentRelation;
	MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
	AcUniqueEntry *e;
	Oid			other = InvalidOid;
	int			i;

	s->archive = try_table_open(s->archiveid, AccessShareLock);
	if (s->archive == NULL)
	{
		MemoryContextSwitchTo(old);
		return;
	}
	e = ac_unique_entry_get(rel);
	if (e->other == s->archiveid && s->nkeys > 0)
		for (i = 0; i < e->npairs; i++)
			if (e->pairs[i].own == s->indexid && e->pairs[i].valid &&
				e->pairs[i].nkeys == s->nkeys)
			{
				other = e->pairs[i].other;
				break;
			}
	if (OidIsValid(other))
	{
		s->aindex = index_open(other, AccessShareLock);
		/* the plan's operators must be those of the counterpart's columns */
		for (i = 0; i < s->nkeys; i++)
			if (!op_in_opfamily(s->opnos[i], s->aindex->rd_opfamily[i]))
			{
				index_close(s->aindex, NoLock);
				s->aindex = NULL;
				break;
			}
	}
	s->aslot = ExecInitExtraTupleSlot(estate, RelationGetDescr(s->archive),
									  table_slot_callbacks(s->archive));
	s->map = convert_tuples_by_name(RelationGetDescr(s->archive), RelationGetDescr(rel));
	if (s->map)
		s->cslot = ExecInitExtraTupleSlot(estate, RelationGetDescr(rel), &TTSOpsHeapTuple);
	MemoryContextSwitchTo(old);
}

static void
ac_probe_begin(CustomScanState *node, EState *estate, int eflags)
{
	AcProbeState *s = (AcProbeState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	/*
	 * The scan tuples are <t>'s own rows (the first plan's slots) and the
	 * archive's (its slots, or converted ones): the projection and the quals,
	 * built for a virtual scan slot, are built again for slots of any kind.
	 * The rows returned are these slots when no projection is needed.
	 */
	node->ss.ps.scanopsfixed = false;
	node->ss.ps.scanopsset = true;
	ExecAssignScanProjectionInfoWithVarno(&node->ss, cscan->scan.scanrelid);
	node->ss.ps.qual = ExecInitQual(cscan->scan.plan.qual, &node->ss.ps);
	node->ss.ps.resultopsset = true;
	node->ss.ps.resultopsfixed = false;

	s->archiveid = linitial_oid(cscan->custom_private);
	s->indexid = lsecond_oid(cscan->custom_private);
	s->nkeys = list_length(cscan->custom_private) - 2;
	for (int i = 0; i < s->nkeys; i++)
		s->opnos[i] = list_nth_oid(cscan->custom_private, i + 2);
	s->keycxt = AllocSetContextCreate(estate->es_query_cxt, "ArchiveClusterProbe keys",
									  ALLOCSET_SMALL_SIZES);
	s->first = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
	node->custom_ps = list_make1(s->first);
	s->keys = ExecInitExprList(cscan->custom_exprs, &node->ss.ps);

	/*
	 * The archive and its index are held open from the start, as the
	 * Append's scan would hold them, so that they count as in use by the
	 * query (no TRUNCATE or DROP INDEX of them by this session while a cursor
	 * is open, say).
	 */
	ac_probe_open(s);
}

/* Start the probe: the archive's rows with the key (all if no index). */
static bool
ac_probe_start(AcProbeState *s)
{
	EState	   *estate = s->css.ss.ps.state;
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	ScanKeyData skeys[INDEX_MAX_KEYS];
	ListCell   *lc;
	int			i = 0;

	if (s->archive == NULL)
		return false;			/* dropped since planning */
	s->probes++;
	if (s->aindex == NULL)
	{
		s->hscan = table_beginscan(s->archive, estate->es_snapshot, 0, NULL);
		return true;
	}
	MemoryContextReset(s->keycxt);
	foreach(lc, s->keys)
	{
		bool		isnull;
		Datum		value = ExecEvalExprSwitchContext(lfirst(lc), econtext, &isnull);
		int			strategy;
		Oid			lefttype;
		Oid			righttype;
		int16		typlen;
		bool		typbyval;
		MemoryContext old;

		if (isnull)
			return false;		/* "=" matches no NULL */
		get_op_opfamily_properties(s->opnos[i], s->aindex->rd_opfamily[i], false,
								   &strategy, &lefttype, &righttype);
		get_typlenbyval(righttype, &typlen, &typbyval);
		old = MemoryContextSwitchTo(s->keycxt);
		value = datumCopy(value, typbyval, typlen);
		MemoryContextSwitchTo(old);
		ScanKeyEntryInitialize(&skeys[i], 0, i + 1, strategy, righttype,
							   s->aindex->rd_indcollation[i], get_opcode(s->opnos[i]), value);
		i++;
	}
	s->iscan = ac_index_beginscan(s->archive, s->aindex, estate->es_snapshot, s->nkeys, 0);
	index_rescan(s->iscan, skeys, s->nkeys, NULL, 0);
	return true;
}

/* The archived row in aslot as a row of <t> (the slot to read it from). */
static TupleTableSlot *
ac_probe_convert(AcProbeState *s)
{
	HeapTuple	src;
	HeapTuple	dst;

	if (s->map == NULL)
		return s->aslot;
	execute_attr_map_slot(s->map->attrMap, s->aslot, s->cslot);
	ExecMaterializeSlot(s->cslot);
	/* its system columns: the archived row's */
	src = ExecFetchSlotHeapTuple(s->aslot, false, NULL);
	dst = ((HeapTupleTableSlot *) s->cslot)->tuple;
	dst->t_self = src->t_self;
	dst->t_tableOid = s->archiveid;
	dst->t_data->t_choice = src->t_data->t_choice;
	dst->t_data->t_ctid = src->t_data->t_ctid;
	dst->t_data->t_infomask = (dst->t_data->t_infomask & ~HEAP_XACT_MASK) |
		(src->t_data->t_infomask & HEAP_XACT_MASK);
	dst->t_data->t_infomask2 = (dst->t_data->t_infomask2 & ~HEAP2_XACT_MASK) |
		(src->t_data->t_infomask2 & HEAP2_XACT_MASK);
	s->cslot->tts_tableOid = s->archiveid;
	s->cslot->tts_tid = src->t_self;
	return s->cslot;
}

/* The next archived row that the quals accept, or NULL. */
static TupleTableSlot *
ac_probe_next(AcProbeState *s)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;

	for (;;)
	{
		bool		got;
		TupleTableSlot *row;

		CHECK_FOR_INTERRUPTS();
		if (s->iscan)
			got = index_getnext_slot(s->iscan, ForwardScanDirection, s->aslot);
		else
			got = table_scan_getnextslot(s->hscan, ForwardScanDirection, s->aslot);
		if (!got)
			return NULL;
		row = ac_probe_convert(s);
		ResetExprContext(econtext);
		econtext->ecxt_scantuple = row;
		if (ExecQual(s->css.ss.ps.qual, econtext))
			return row;
	}
}

static void
ac_probe_stop(AcProbeState *s)
{
	if (s->iscan)
		index_endscan(s->iscan);
	if (s->hscan)
		table_endscan(s->hscan);
	s->iscan = NULL;
	s->hscan = NULL;
}

/* The row of the scan tuple row, projected as the plan asks. */
static TupleTableSlot *
ac_probe_project(AcProbeState *s, TupleTableSlot *row)
{
	ProjectionInfo *proj = s->css.ss.ps.ps_ProjInfo;

	if (proj == NULL)
		return row;
	s->css.ss.ps.ps_ExprContext->ecxt_scantuple = row;
	return ExecProject(proj);
}

static TupleTableSlot *
ac_probe_exec(CustomScanState *node)
{
	AcProbeState *s = (AcProbeState *) node;
	TupleTableSlot *row;

	if (s->phase == 0)
	{
		row = ExecProcNode(s->first);
		if (!TupIsNull(row))
		{
			/* a row projected by the first plan (a dropped column) */
			if (!OidIsValid(row->tts_tableOid))
				row->tts_tableOid = RelationGetRelid(node->ss.ss_currentRelation);
			s->found = true;
			ResetExprContext(node->ss.ps.ps_ExprContext);
			return ac_probe_project(s, row);
		}
		s->phase = 2;
		/* under SERIALIZABLE the archive's scan takes its predicate locks */
		if ((!s->found || IsolationIsSerializable()) && ac_probe_start(s))
			s->phase = 1;
	}
	if (s->phase == 1)
	{
		row = ac_probe_next(s);
		if (row != NULL)
			return ac_probe_project(s, row);
		ac_probe_stop(s);
		s->phase = 2;
	}
	return ExecClearTuple(node->ss.ps.ps_ResultTupleSlot);
}

static void
ac_probe_end(CustomScanState *node)
{
	AcProbeState *s = (AcProbeState *) node;

	ac_probe_stop(s);
	ExecEndNode(s->first);
	if (s->aindex)
		index_close(s->aindex, NoLock);
	if (s->archive)
		table_close(s->archive, NoLock);
}

static void
ac_probe_rescan(CustomScanState *node)
{
	AcProbeState *s = (AcProbeState *) node;

	ac_probe_stop(s);
	if (node->ss.ps.chgParam != NULL)
		UpdateChangedParamSet(s->first, node->ss.ps.chgParam);
	if (s->first->chgParam == NULL)
		ExecReScan(s->first);
	s->phase = 0;
	s->found = false;
}

static void
ac_probe_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	AcProbeState *s = (AcProbeState *) node;
	char	   *name = get_rel_name(s->archiveid);

	ExplainPropertyText("Archive", name ? name : "(dropped)", es);
	if (es->analyze)
		ExplainPropertyInteger("Archive Probes", NULL, s->probes, es);
}

/* Install the planner hooks and the custom scan (in every session). */
void
ac_tier_probe_install(void)
{
	RegisterCustomScanMethods(&ac_probe_scan_methods);
	prev_planner = planner_hook;
	planner_hook = ac_probe_planner;
	prev_set_rel_pathlist = set_rel_pathlist_hook;
	set_rel_pathlist_hook = ac_probe_rel_pathlist;
}
