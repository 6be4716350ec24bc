/*-------------------------------------------------------------------------
 *
 * row_locks.c
 *		Refuses row locks (FOR UPDATE, FOR NO KEY UPDATE, FOR SHARE, FOR KEY
 *		SHARE) through a registered view.
 *
 *		PostgreSQL accepts a row lock on a view and pushes it down into the
 *		view's query, onto the relations of its FROM clause.  A registered
 *		view is "SELECT ... FROM <t>_current UNION ALL SELECT ... FROM
 *		<t>_archive": a set operation has no FROM clause of its own, so the
 *		lock reaches no table, and the statement succeeds having locked no
 *		row (select_for_update(), SKIP LOCKED job queues silently break).
 *		Such a statement is refused instead (0A000), with a hint to lock the
 *		rows in the two tables.
 *
 *		Two hooks, installed whenever the library is loaded:
 *		- after parse analysis: a row lock on a view in any query level
 *		  (subqueries, WITH, sublinks, the query of EXPLAIN, DECLARE CURSOR
 *		  and CREATE TABLE AS), or pushed down through other views into one,
 *		  as the rewriter will push it; so PREPARE, CREATE VIEW and SQL
 *		  function bodies refuse it up front;
 *		- while planning, for each query level (create_upper_paths_hook,
 *		  UPPERREL_FINAL: every level gets there): a row lock on a subquery
 *		  that the rewriter expanded from a registered view, for queries this
 *		  session never analysed (SQL function bodies in BEGIN ATOMIC, also
 *		  when inlined, views and rules stored with a row lock).
 *
 *		A view is registered when it has an INSTEAD OF row trigger running
 *		the C function archive_cluster_view_trigger of this library (the
 *		answer per trigger function is cached until pg_proc changes).  A
 *		statement holding no row lock costs a walk of its tree after parse
 *		analysis and a test per query level when planned, without any
 *		catalog access.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_language.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_trigger.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/parsenodes.h"
#include "optimizer/planner.h"
#include "parser/analyze.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteHandler.h"
#include "storage/lockdefs.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "compat.h"
#include "view/row_locks.h"

/* the trigger function of a registered view: its symbol and library */
#define AC_VIEW_TRIGGER_SYMBOL "archive_cluster_view_trigger"
#define AC_LIBRARY_NAME "archive_cluster"

/* views over views followed at most this deep after parse analysis */
#define AC_MAX_VIEW_DEPTH 32

/* Is this function the view trigger of this library?  Cached per OID. */
typedef struct AcTriggerFunction
{
	Oid			fnoid;			/* hash key */
	bool		ours;
} AcTriggerFunction;

static post_parse_analyze_hook_type prev_post_parse_analyze = NULL;
static create_upper_paths_hook_type prev_create_upper_paths = NULL;

static HTAB *ac_trigger_functions = NULL;
static bool ac_trigger_functions_stale = false;
static bool ac_trigger_functions_callback = false;

static void ac_check_query(Query *query);

static void
ac_trigger_functions_inval(Datum arg, int cacheid, uint32 hashvalue)
{
	ac_trigger_functions_stale = true;
}

/* Does probin ("$libdir/archive_cluster", or a path to it) name this library? */
static bool
ac_is_our_library(const char *probin)
{
	const char *base = last_dir_separator(probin);
	size_t		len = strlen(AC_LIBRARY_NAME);

	base = base != NULL ? base + 1 : probin;
	return strncmp(base, AC_LIBRARY_NAME, len) == 0 &&
		(base[len] == '\0' || base[len] == '.');
}

static bool
ac_lookup_trigger_function(Oid fnoid)
{
	HeapTuple	tup = SearchSysCache1(PROCOID, ObjectIdGetDatum(fnoid));
	bool		ours = false;

	if (!HeapTupleIsValid(tup))
		return false;
	if (((Form_pg_proc) GETSTRUCT(tup))->prolang == ClanguageId)
	{
		Datum		d;
		bool		isnull;

		d = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_prosrc, &isnull);
		if (!isnull && strcmp(TextDatumGetCString(d), AC_VIEW_TRIGGER_SYMBOL) == 0)
		{
			d = SysCacheGetAttr(PROCOID, tup, Anum_pg_proc_probin, &isnull);
			ours = !isnull && ac_is_our_library(TextDatumGetCString(d));
		}
	}
	ReleaseSysCache(tup);
	return ours;
}

static bool
ac_is_view_trigger_function(Oid fnoid)
{
	AcTriggerFunction *entry;
	bool		ours;

	if (ac_trigger_functions == NULL || ac_trigger_functions_stale)
	{
		HASHCTL		ctl;

		if (!ac_trigger_functions_callback)
		{
			CacheRegisterSyscacheCallback(PROCOID, ac_trigger_functions_inval, (Datum) 0);
			ac_trigger_functions_callback = true;
		}
		if (ac_trigger_functions != NULL)
		{
			hash_destroy(ac_trigger_functions);
			ac_trigger_functions = NULL;
		}
		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(AcTriggerFunction);
		ac_trigger_functions = hash_create("archive_cluster view trigger functions", 16,
										   &ctl, HASH_ELEM | HASH_BLOBS);
		ac_trigger_functions_stale = false;
	}

	entry = hash_search(ac_trigger_functions, &fnoid, HASH_FIND, NULL);
	if (entry != NULL)
		return entry->ours;
	ours = ac_lookup_trigger_function(fnoid);
	/* pg_proc changed during the lookup: answer, but do not keep it */
	if (!ac_trigger_functions_stale)
	{
		entry = hash_search(ac_trigger_functions, &fnoid, HASH_ENTER, NULL);
		entry->ours = ours;
	}
	return ours;
}

/* Is the view registered: has it an INSTEAD OF row trigger of ours? */
static bool
ac_view_is_ours(Relation view)
{
	TriggerDesc *trigdesc = view->trigdesc;
	Oid		   *fns;
	int			nfns = 0;
	int			i;

	if (trigdesc == NULL)
		return false;
	/* the OIDs first: a lookup may rebuild the view's relcache entry */
	fns = palloc(sizeof(Oid) * trigdesc->numtriggers);
	for (i = 0; i < trigdesc->numtriggers; i++)
	{
		Trigger    *trigger = &trigdesc->triggers[i];

		if (TRIGGER_FOR_ROW(trigger->tgtype) && TRIGGER_FOR_INSTEAD(trigger->tgtype))
			fns[nfns++] = trigger->tgfoid;
	}
	for (i = 0; i < nfns; i++)
		if (ac_is_view_trigger_function(fns[i]))
			return true;
	return false;
}

/* The table that branch "arg" of a registered view's UNION ALL reads, or InvalidOid. */
static Oid
ac_branch_table(Query *viewquery, Node *arg)
{
	RangeTblEntry *rte;
	Query	   *branch;

	if (arg == NULL || !IsA(arg, RangeTblRef))
		return InvalidOid;
	rte = rt_fetch(((RangeTblRef *) arg)->rtindex, viewquery->rtable);
	if (rte->rtekind != RTE_SUBQUERY || rte->subquery == NULL)
		return InvalidOid;
	branch = rte->subquery;
	if (list_length(branch->rtable) != 1 || rt_fetch(1, branch->rtable)->rtekind != RTE_RELATION)
		return InvalidOid;
	return rt_fetch(1, branch->rtable)->relid;
}

/*
 * Refuse a row lock on registered view "view", locked directly or (through
 * not NULL) through the view named so.
 */
static void
ac_refuse_row_lock(Relation view, const char *through, LockClauseStrength strength)
{
	char	   *name = pstrdup(RelationGetRelationName(view));
	Query	   *query = get_view_query(view);
	SetOperationStmt *setop = (SetOperationStmt *) query->setOperations;
	Oid			current = InvalidOid;
	Oid			archive = InvalidOid;
	char	   *curname = NULL;
	char	   *arcname = NULL;

	/* no catalog access before both are known (the relcache may change) */
	if (setop != NULL && IsA(setop, SetOperationStmt))
	{
		current = ac_branch_table(query, setop->larg);
		archive = ac_branch_table(query, setop->rarg);
	}
	if (OidIsValid(current) && OidIsValid(archive))
	{
		curname = get_rel_name(current);
		arcname = get_rel_name(archive);
	}

	ereport(ERROR,
			(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
			 errmsg("%s cannot be applied to view \"%s\"",
					LCS_asString(strength), through != NULL ? through : name),
			 through == NULL ?
			 errdetail("View \"%s\" is a table registered with archive_cluster; a row lock through it would lock no rows.",
					   name) :
			 errdetail("View \"%s\" reads \"%s\", a table registered with archive_cluster; a row lock through it would lock no rows.",
					   through, name),
			 curname != NULL && arcname != NULL ?
			 errhint("Lock the rows in \"%s\" and \"%s\" instead.", curname, arcname) :
			 errhint("Lock the rows in the tables of view \"%s\" instead.", name)));
}

static void ac_check_pushed_down(Query *query, Node *jtnode, const char *through,
								 LockClauseStrength strength, int depth);

/*
 * A row lock applies to view viewid: refuse it if the view is registered.
 * With depth >= 0, follow the lock into the view's query as the rewriter
 * will (through names the view the statement locks, NULL for this one).
 */
static void
ac_check_locked_view(Oid viewid, const char *through, LockClauseStrength strength,
					 LOCKMODE lockmode, int depth)
{
	Relation	view = relation_open(viewid, lockmode);

	if (view->rd_rel->relkind == RELKIND_VIEW)
	{
		if (ac_view_is_ours(view))
			ac_refuse_row_lock(view, through, strength);
		if (depth >= 0 && depth < AC_MAX_VIEW_DEPTH)
		{
			Query	   *query = copyObject(get_view_query(view));

			if (through == NULL)
				through = pstrdup(RelationGetRelationName(view));
			ac_check_pushed_down(query, (Node *) query->jointree, through, strength, depth + 1);
		}
	}
	relation_close(view, NoLock);
}

/*
 * The relations a row lock pushed down into query reaches, from its join
 * tree node jtnode on, as the rewriter's markQueryForLocking() finds them.
 * A view among them is locked as the rewriter will lock it.
 */
static void
ac_check_pushed_down(Query *query, Node *jtnode, const char *through,
					 LockClauseStrength strength, int depth)
{
	if (jtnode == NULL)
		return;
	check_stack_depth();
	if (IsA(jtnode, RangeTblRef))
	{
		RangeTblEntry *rte = rt_fetch(((RangeTblRef *) jtnode)->rtindex, query->rtable);

		if (rte->rtekind == RTE_RELATION && get_rel_relkind(rte->relid) == RELKIND_VIEW)
			ac_check_locked_view(rte->relid, through, strength, RowShareLock, depth);
		else if (rte->rtekind == RTE_SUBQUERY && rte->subquery != NULL)
			ac_check_pushed_down(rte->subquery, (Node *) rte->subquery->jointree,
								 through, strength, depth);
	}
	else if (IsA(jtnode, FromExpr))
	{
		ListCell   *lc;

		foreach(lc, ((FromExpr *) jtnode)->fromlist)
			ac_check_pushed_down(query, lfirst(lc), through, strength, depth);
	}
	else if (IsA(jtnode, JoinExpr))
	{
		ac_check_pushed_down(query, ((JoinExpr *) jtnode)->larg, through, strength, depth);
		ac_check_pushed_down(query, ((JoinExpr *) jtnode)->rarg, through, strength, depth);
	}
}

/*
 * Check the row locks of one query level.  A query just analysed names views
 * as relations; in a rewritten one (rewritten), they are subqueries already,
 * and the rewriter has pushed their locks down as far as they go.
 */
static void
ac_check_rowmarks(Query *query, bool rewritten)
{
	ListCell   *lc;

	foreach(lc, query->rowMarks)
	{
		RowMarkClause *rc = lfirst_node(RowMarkClause, lc);
		RangeTblEntry *rte = rt_fetch(rc->rti, query->rtable);

		if (rewritten)
		{
			Oid			viewid = ac_expanded_view(rte);

			if (OidIsValid(viewid))
				ac_check_locked_view(viewid, NULL, rc->strength, AccessShareLock, -1);
		}
		else if (rte->rtekind == RTE_RELATION && rte->relkind == RELKIND_VIEW)
			ac_check_locked_view(rte->relid, NULL, rc->strength, NoLock, 0);
	}
}

/* Finds the queries of sublinks. */
static bool
ac_sublink_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Query))
	{
		ac_check_query((Query *) node);
		return false;
	}
	return expression_tree_walker(node, ac_sublink_walker, context);
}

/* Check the row locks of a query just analysed, and of every query in it. */
static void
ac_check_query(Query *query)
{
	ListCell   *lc;

	check_stack_depth();

	ac_check_rowmarks(query, false);

	/* statements whose query is analysed with them */
	if (query->utilityStmt != NULL)
	{
		Node	   *inner = NULL;

		if (IsA(query->utilityStmt, DeclareCursorStmt))
			inner = ((DeclareCursorStmt *) query->utilityStmt)->query;
		else if (IsA(query->utilityStmt, ExplainStmt))
			inner = ((ExplainStmt *) query->utilityStmt)->query;
		else if (IsA(query->utilityStmt, CreateTableAsStmt))
			inner = ((CreateTableAsStmt *) query->utilityStmt)->query;
		if (inner != NULL && IsA(inner, Query))
			ac_check_query((Query *) inner);
	}

	foreach(lc, query->cteList)
	{
		CommonTableExpr *cte = lfirst_node(CommonTableExpr, lc);

		if (cte->ctequery != NULL && IsA(cte->ctequery, Query))
			ac_check_query((Query *) cte->ctequery);
	}
	foreach(lc, query->rtable)
	{
		RangeTblEntry *rte = lfirst_node(RangeTblEntry, lc);

		if (rte->rtekind == RTE_SUBQUERY && rte->subquery != NULL)
			ac_check_query(rte->subquery);
	}
	if (query->hasSubLinks)
		(void) query_tree_walker(query, ac_sublink_walker, NULL,
								 QTW_IGNORE_RT_SUBQUERIES | QTW_IGNORE_CTE_SUBQUERIES);
}

static void
ac_post_parse_analyze(ParseState *pstate, Query *query, AcJumbleState *jstate)
{
	if (prev_post_parse_analyze)
		prev_post_parse_analyze(pstate, query, jstate);
	ac_check_query(query);
}

static void
ac_create_upper_paths(PlannerInfo *root, UpperRelationKind stage,
					  RelOptInfo *input_rel, RelOptInfo *output_rel, void *extra)
{
	if (stage == UPPERREL_FINAL && root->parse->rowMarks != NIL)
		ac_check_rowmarks(root->parse, true);
	if (prev_create_upper_paths)
		prev_create_upper_paths(root, stage, input_rel, output_rel, extra);
}

void
ac_row_locks_install(void)
{
	prev_post_parse_analyze = post_parse_analyze_hook;
	post_parse_analyze_hook = ac_post_parse_analyze;
	prev_create_upper_paths = create_upper_paths_hook;
	create_upper_paths_hook = ac_create_upper_paths;
}
