/*-------------------------------------------------------------------------
 *
 * run_partitioned.c
 *		archive_cluster_run() on a registered partitioned table (through
 *		ac_partitioned_run_hook, archive/table_job.c): a pass over each of
 *		its closed leaves that is due, one after another, in the caller's
 *		transaction (the worker passes one leaf per transaction).  A pass
 *		over a leaf is due when
 *		- no pass went through it to the end yet (a new closed leaf, one a
 *		  pass gave way in, one restored from a dump);
 *		- VACUUM freed most of its front half since (AC_TO_FRONT_SHARE):
 *		  the rows of the last pass are at the back, and this pass moves
 *		  them to the front, so that the next VACUUM truncates the file;
 *		- force.
 *		Each pass is recorded in the run history (kind 'pass', the leaf
 *		in its detail).  The call stops when a pass gives way: every leaf
 *		it passed stays locked until it commits, so it looks for waiters on
 *		all of them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/resowner.h"
#include "utils/timestamp.h"

#include "archive/table_job.h"
#include "base/util.h"
#include "partition/leaf_pass.h"
#include "partition/leaves.h"
#include "partition/run_partitioned.h"
#include "registry/config.h"
#include "registry/partitioned.h"

/* Why a pass over this leaf is due (a closed one), or NULL if it is not. */
const char *
ac_leaf_due(AcPartitionedConfig *cfg, Oid leaf, bool force)
{
	AcLeafState st;

	if (ac_leaf_closed(cfg, leaf, true) == AC_OPEN)
		return NULL;
	ac_leaf_state(leaf, &st);
	if (st.resume_at != NULL)
		return "resumed";
	if (st.settled_at == 0)
		return "first pass";
	if (ac_leaf_front_empty(leaf) >= AC_TO_FRONT_SHARE)
		return "to the front";
	if (force)
		return "forced";
	return NULL;
}

/* Record one pass in the run history. */
void
ac_log_pass(AcPartitionedConfig *cfg, Oid leaf, const char *why, AcLeafPass *pass,
			TimestampTz started, const char *started_by, Oid run_as)
{
	AcRunLog	log;

	memset(&log, 0, sizeof(log));
	log.relation = cfg->relation;
	log.kind = AC_KIND_PASS;
	log.started = started;
	log.finished = GetCurrentTimestamp();
	log.rows = pass->rows;
	log.bytes = pass->bytes;
	log.batches = pass->pages > 0 ? 1 : 0;
	log.paced_us = pass->paced_us;
	log.started_by = started_by;
	log.run_as = run_as;
	log.rows_busy = pass->busy;
	log.detail = psprintf("leaf %s (%s): %lld pages%s; %s", ac_qualified_name(leaf), why,
						  (long long) pass->pages, pass->gave_way ? ", gave way" : "",
						  pass->detail ? pass->detail : "");
	ac_log_run(&log);
}

/*
 * Pass the due closed leaves of cfg's partitioned table, at most max_leaves
 * of them (0: all), in the caller's transaction.  An error in one leaf is a
 * WARNING (recorded), and the others go on; a cancel ends the call.
 */
void
ac_run_partitioned(AcPartitionedConfig *cfg, bool force, int max_leaves,
				   const char *started_by, AcRunResult *res)
{
	List	   *leaves = ac_partition_leaves(cfg);
	List	   *held = NIL;
	ListCell   *lc;
	int			passed = 0;
	bool		gave_way = false;

	memset(res, 0, sizeof(*res));
	res->started = GetCurrentTimestamp();
	foreach(lc, leaves)
	{
		AcLeaf	   *l = lfirst(lc);
		MemoryContext oldcxt = CurrentMemoryContext;
		ResourceOwner oldowner = CurrentResourceOwner;
		TimestampTz started = GetCurrentTimestamp();
		const char *why;
		AcLeafPass	pass;

		CHECK_FOR_INTERRUPTS();
		if (max_leaves > 0 && passed >= max_leaves)
		{
			res->more = true;
			break;
		}
		if (ac_leaves_have_waiters(held))
		{
			gave_way = true;
			break;
		}
		why = ac_leaf_due(cfg, l->leaf, force);
		if (why == NULL)
			continue;

		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(oldcxt);
		PG_TRY();
		{
			ac_pass_leaf(cfg, l->leaf, held, &pass);
			ReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(oldcxt);
			CurrentResourceOwner = oldowner;
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(oldcxt);
			edata = CopyErrorData();
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(oldcxt);
			CurrentResourceOwner = oldowner;
			if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
				ReThrowError(edata);
			ac_report_caught(edata, WARNING, get_rel_name(l->leaf));
			ac_log_run_error(cfg->relation, AC_KIND_PASS, started, started_by,
							 ac_relation_owner(cfg->relation), edata->message);
			FreeErrorData(edata);
			continue;
		}
		PG_END_TRY();

		held = lappend_oid(held, l->leaf);
		if (pass.rows > 0 || pass.busy > 0)
			ac_log_pass(cfg, l->leaf, why, &pass, started, started_by,
						ac_relation_owner(cfg->relation));
		res->rows += pass.rows;
		res->bytes += pass.bytes;
		res->paced_us += pass.paced_us;
		if (pass.rows > 0)
			res->batches++;
		passed++;
		if (pass.gave_way)
		{
			gave_way = true;
			break;
		}
	}
	res->finished = GetCurrentTimestamp();
	if (gave_way)
		res->status = "gave way";
	else if (res->batches > 0)
		res->status = "passed";
	else
		res->status = "nothing due";
}

/* ac_partitioned_run_hook: archive_cluster_run() on a registered partitioned table */
void
ac_run_partitioned_call(Oid relation, const AcRunArgs *args, AcRunResult *res)
{
	AcPartitionedConfig cfg;

	if (!ac_load_partitioned(relation, &cfg))
	{
		memset(res, 0, sizeof(*res));
		res->started = res->finished = GetCurrentTimestamp();
		res->status = "not registered";
		return;
	}
	ac_run_partitioned(&cfg, args->force, args->max_batches, ac_caller(), res);
}
