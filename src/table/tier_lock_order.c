/*-------------------------------------------------------------------------
 *
 * tier_lock_order.c
 *		Table mode: a statement that writes to <t>_archive itself locks <t>
 *		first.  Its rows are checked against <t> (tier_unique.c), which needs
 *		a lock on <t>; ALTER TABLE <t> locks <t>, then its child.  A writer of
 *		the archive that took <t>'s lock only at its first row, holding the
 *		archive's since it began, could deadlock with it (40P01), which a
 *		plain inheritance child never does.  So <t> is locked (ACCESS SHARE)
 *		as such a statement starts (ExecutorStart), and by COPY FROM before it
 *		opens the archive.  The archive's own lock is taken by the statement's
 *		parse analysis, before any hook: an ALTER TABLE that comes in between
 *		can still meet it.  Other statements pay a hash look-up: whether a
 *		relation is a tier is remembered until its relcache entry goes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "table/guard_indexes.h"
#include "table/tier_lock_order.h"
#include "table/tier_unique.h"

static ExecutorStart_hook_type prev_executor_start = NULL;
static ProcessUtility_hook_type prev_process_utility = NULL;

/* Has a relation a guard index?  Remembered until its relcache entry goes. */
typedef struct AcGuardedRel
{
	Oid			relid;			/* hash key */
	bool		guarded;
} AcGuardedRel;

static HTAB *ac_guarded_rels = NULL;
static uint64 ac_guarded_invals = 0;	/* invalidations seen */

static void
ac_guarded_rels_inval(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	AcGuardedRel *r;

	ac_guarded_invals++;
	if (OidIsValid(relid))
	{
		(void) hash_search(ac_guarded_rels, &relid, HASH_REMOVE, NULL);
		return;
	}
	hash_seq_init(&status, ac_guarded_rels);
	while ((r = hash_seq_search(&status)) != NULL)
		(void) hash_search(ac_guarded_rels, &r->relid, HASH_REMOVE, NULL);
}

/* Is rel a tier (a table with a guard index)?  A hash look-up once known. */
static bool
ac_rel_guarded(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	AcGuardedRel *r;
	bool		guarded;
	uint64		invals;
	List	   *guards;

	if (ac_guarded_rels == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(AcGuardedRel);
		ac_guarded_rels = hash_create("archive_cluster guarded relations", 64, &ctl,
									  HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(ac_guarded_rels_inval, (Datum) 0);
	}
	r = hash_search(ac_guarded_rels, &relid, HASH_FIND, NULL);
	if (r != NULL)
		return r->guarded;
	invals = ac_guarded_invals;
	guards = ac_guard_indexes(rel);
	guarded = guards != NIL;
	list_free(guards);
	/* an invalidation meanwhile: the answer is used once, not kept */
	if (invals == ac_guarded_invals)
	{
		r = hash_search(ac_guarded_rels, &relid, HASH_ENTER, NULL);
		r->guarded = guarded;
	}
	return guarded;
}

/*
 * Before a statement writes to a tier: <t> locked first (a write to the
 * archive; ac_unique_lock_parent).
 */
static void
ac_lock_order_executor_start(QueryDesc *queryDesc, int eflags)
{
	CmdType		cmd = queryDesc->plannedstmt->commandType;
	ListCell   *lc;

	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
	if (((cmd == CMD_SELECT || cmd == CMD_DELETE) && !queryDesc->plannedstmt->hasModifyingCTE) ||
		(eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0)
		return;
	foreach(lc, queryDesc->estate->es_opened_result_relations)
	{
		Relation	rel = ((ResultRelInfo *) lfirst(lc))->ri_RelationDesc;

		if (ac_rel_guarded(rel))
			ac_unique_lock_parent(rel);
	}
}

/* COPY FROM into the archive of a table in table mode: <t> locked first. */
static void
ac_lock_order_copy(Node *stmt)
{
	CopyStmt   *copy = (CopyStmt *) stmt;
	Oid			relid;

	if (!IsA(stmt, CopyStmt) || !copy->is_from || copy->relation == NULL ||
		!OidIsValid(get_index_am_oid(AC_GUARD_AM, true)))
		return;
	relid = RangeVarGetRelid(copy->relation, NoLock, true);
	if (OidIsValid(relid) && get_rel_relkind(relid) == RELKIND_RELATION &&
		!get_rel_relispartition(relid) && has_superclass(relid))
		ac_unique_lock_parent_of(relid);
}

static void
ac_lock_order_process_utility(PlannedStmt *pstmt, const char *queryString,
							  bool readOnlyTree, ProcessUtilityContext context,
							  ParamListInfo params, QueryEnvironment *queryEnv,
							  DestReceiver *dest, QueryCompletion *qc)
{
	ac_lock_order_copy(pstmt->utilityStmt);
	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context,
							 params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

void
ac_lock_order_install(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = ac_lock_order_executor_start;
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = ac_lock_order_process_utility;
}
