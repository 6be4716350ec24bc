/*-------------------------------------------------------------------------
 *
 * on_conflict.c
 *		Table mode: INSERT ... ON CONFLICT on <t> meeting an archived row.
 *
 *		ON CONFLICT looks for conflicts in the arbiter indexes of <t>, which
 *		hold <t>'s own rows only: an archived row with the same key is not
 *		seen, the row is inserted, and the cross-tier check that runs after
 *		it (tier_unique.c) fails with 23505.  A plain table would have
 *		skipped the row (DO NOTHING) or updated the existing one (DO
 *		UPDATE).
 *
 *		So, for an INSERT ... ON CONFLICT into a table registered in table
 *		mode, an ExecutorStart hook adds a BEFORE ROW INSERT trigger to the
 *		statement's own copy of the table's triggers (the ResultRelInfo's,
 *		copied from the relcache by the executor; the catalog is not
 *		touched): it runs archive_cluster_unique_check() with the action
 *		and the arbiter indexes as arguments, before the executor's own
 *		conflict check.  A row whose key in an arbiter index is archived
 *		(looked up as tier_unique.c does, waiting for a writer in progress)
 *		is then skipped for DO NOTHING, as a plain table would; for DO
 *		UPDATE it is brought back into <t> (unarchive.c), where the
 *		executor's conflict check finds it, locks it and updates it, as on a
 *		plain table.  A real trigger would cost every COPY its multi-row
 *		inserts; this one exists for ON CONFLICT statements only.
 *
 *		A row brought back is written with the statement's command id, and
 *		the statement then goes on with the next one: the executor updates a
 *		row that an earlier command wrote, but refuses one its own command
 *		inserted ("cannot affect row a second time").
 *
 *		Installed whenever the library is loaded, as row_locks.c is: with
 *		archive_cluster in shared_preload_libraries (or
 *		session_preload_libraries), in every session.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_trigger.h"
#include "commands/defrem.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "compat.h"
#include "table/on_conflict.h"
#include "table/guard_indexes.h"

/* the name of the trigger added to ON CONFLICT statements */
#define AC_CONFLICT_TRIGGER "archive_cluster_on_conflict"

static ExecutorStart_hook_type prev_executor_start = NULL;

/*
 * archive_cluster_unique_check(), the function of the trigger added, found
 * in the schema of the guard's handler; InvalidOid if not there.
 */
static Oid
ac_unique_check_function(void)
{
	Oid			am = get_index_am_oid(AC_GUARD_AM, true);
	HeapTuple	tuple;
	Oid			nsp;

	if (!OidIsValid(am))
		return InvalidOid;
	tuple = SearchSysCache1(AMOID, ObjectIdGetDatum(am));
	if (!HeapTupleIsValid(tuple))
		return InvalidOid;
	nsp = get_func_namespace(((Form_pg_am) GETSTRUCT(tuple))->amhandler);
	ReleaseSysCache(tuple);
	return LookupFuncName(list_make2(makeString(get_namespace_name(nsp)),
									 makeString("archive_cluster_unique_check")),
						  0, NULL, true);
}

/*
 * Append a BEFORE ROW INSERT trigger running fnoid to the statement's
 * triggers of rri, with arguments: the action, the command id to write rows
 * brought back with, then the OIDs of the arbiter indexes (none: ON
 * CONFLICT without a target, where every unique index is one).  Allocated
 * in the query's memory.  True if it may bring archived rows back (DO
 * UPDATE on <t>).
 */
static bool
ac_add_conflict_trigger(ResultRelInfo *rri, Oid fnoid, OnConflictAction action,
						EState *estate)
{
	TriggerDesc *td = rri->ri_TrigDesc;
	int			n;
	Trigger    *trig;
	ListCell   *lc;
	int			i;

	if (td == NULL)
	{
		/* no trigger of the table's own: the executor's state, empty */
		td = palloc0(sizeof(TriggerDesc));
		td->triggers = palloc0(sizeof(Trigger));
		rri->ri_TrigDesc = td;
		rri->ri_TrigFunctions = palloc0(sizeof(FmgrInfo));
		rri->ri_TrigWhenExprs = palloc0(sizeof(ExprState *));
		if (estate->es_instrument)
			rri->ri_TrigInstrument = ac_trigger_instr_alloc(1, estate->es_instrument);
	}
	n = td->numtriggers;

	/* a plan node reached twice (a CTE is also among es_subplanstates) */
	if (n > 0 && td->triggers[n - 1].tgisinternal && td->triggers[n - 1].tgfoid == fnoid &&
		strcmp(td->triggers[n - 1].tgname, AC_CONFLICT_TRIGGER) == 0)
		return false;

	td->triggers = repalloc(td->triggers, sizeof(Trigger) * (n + 1));
	trig = &td->triggers[n];
	memset(trig, 0, sizeof(Trigger));
	trig->tgname = pstrdup(AC_CONFLICT_TRIGGER);
	trig->tgfoid = fnoid;
	trig->tgtype = TRIGGER_TYPE_ROW | TRIGGER_TYPE_BEFORE | TRIGGER_TYPE_INSERT;
	trig->tgenabled = TRIGGER_FIRES_ON_ORIGIN;	/* not under replica, as the guard */
	trig->tgisinternal = true;
	trig->tgnargs = 2 + list_length(rri->ri_onConflictArbiterIndexes);
	trig->tgargs = palloc(sizeof(char *) * trig->tgnargs);
	trig->tgargs[0] = pstrdup(action == ONCONFLICT_NOTHING ? "nothing" : "update");
	trig->tgargs[1] = psprintf("%u", estate->es_output_cid);
	i = 2;
	foreach(lc, rri->ri_onConflictArbiterIndexes)
		trig->tgargs[i++] = psprintf("%u", lfirst_oid(lc));
	td->numtriggers = n + 1;
	td->trig_insert_before_row = true;

	/* the executor's per-trigger state, one more slot */
	rri->ri_TrigFunctions = repalloc(rri->ri_TrigFunctions, sizeof(FmgrInfo) * (n + 1));
	memset(&rri->ri_TrigFunctions[n], 0, sizeof(FmgrInfo));
	rri->ri_TrigWhenExprs = repalloc(rri->ri_TrigWhenExprs, sizeof(ExprState *) * (n + 1));
	rri->ri_TrigWhenExprs[n] = NULL;
	if (rri->ri_TrigInstrument != NULL && n > 0)
	{
		AcTriggerInstrumentation *instr = ac_trigger_instr_alloc(n + 1, estate->es_instrument);

		memcpy(instr, rri->ri_TrigInstrument, sizeof(AcTriggerInstrumentation) * n);
		rri->ri_TrigInstrument = instr;
	}

	/* rows are brought back into <t> (the parent of the two), unless replica */
	return action == ONCONFLICT_UPDATE && rri->ri_RelationDesc->rd_rel->relhassubclass &&
		SessionReplicationRole != SESSION_REPLICATION_ROLE_REPLICA;
}

/* What the walk over a statement's plan found. */
typedef struct AcConflictWalk
{
	EState	   *estate;
	bool		brings_back;	/* a DO UPDATE may bring archived rows back */
} AcConflictWalk;

static bool
ac_on_conflict_walker(PlanState *ps, void *context)
{
	AcConflictWalk *walk = context;

	if (ps == NULL)
		return false;
	if (IsA(ps, ModifyTableState))
	{
		ModifyTableState *mt = (ModifyTableState *) ps;
		ModifyTable *node = (ModifyTable *) ps->plan;

		if (mt->operation == CMD_INSERT && node->onConflictAction != ONCONFLICT_NONE &&
			mt->mt_nrels == 1)
		{
			ResultRelInfo *rri = mt->resultRelInfo;
			Oid			fnoid;

			if (ac_guard_present(rri->ri_RelationDesc) &&
				OidIsValid(fnoid = ac_unique_check_function()) &&
				ac_add_conflict_trigger(rri, fnoid, node->onConflictAction, walk->estate))
				walk->brings_back = true;
		}
	}
	return planstate_tree_walker(ps, ac_on_conflict_walker, context);
}

static void
ac_executor_start(QueryDesc *queryDesc, int eflags)
{
	MemoryContext oldcxt;
	AcConflictWalk walk;
	ListCell   *lc;

	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);

	/* only statements that insert with ON CONFLICT, somewhere in the plan */
	if (queryDesc->plannedstmt->commandType == CMD_SELECT &&
		!queryDesc->plannedstmt->hasModifyingCTE)
		return;
	if ((eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0)
		return;
	walk.estate = queryDesc->estate;
	walk.brings_back = false;
	oldcxt = MemoryContextSwitchTo(queryDesc->estate->es_query_cxt);
	(void) ac_on_conflict_walker(queryDesc->planstate, &walk);
	foreach(lc, queryDesc->estate->es_subplanstates)
		(void) ac_on_conflict_walker((PlanState *) lfirst(lc), &walk);
	MemoryContextSwitchTo(oldcxt);

	/*
	 * Rows brought back are written with the command id the statement had
	 * (its snapshot does not see them); the statement writes with the next
	 * one.  Nothing has run yet: only ExecutorRun reads es_output_cid.
	 */
	if (walk.brings_back)
	{
		CommandCounterIncrement();
		queryDesc->estate->es_output_cid = GetCurrentCommandId(true);
	}
}

void
ac_on_conflict_install(void)
{
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = ac_executor_start;
}
