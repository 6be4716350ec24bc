/*-------------------------------------------------------------------------
 *
 * worker_partitioned.c
 *		The worker's turn at the registered partitioned tables of its
 *		database, after the registered tables: every closed leaf whose pass
 *		is due (partition/run_partitioned.c), each in a transaction of its
 *		own, bounded by archive_cluster.job_timeout, so that a pass holds
 *		its leaf's lock for one pass only, and a DROP or DETACH of another
 *		leaf never waits for it.  A pass that gave way (to a session
 *		waiting for its leaf or for a row it moved) goes on from where it
 *		stopped in the next transaction, after the waiter.  The pages a first pass empties are freed
 *		by autovacuum (the pass leaves as many dead rows as the leaf has);
 *		the next turn then moves the rows to the front, and the VACUUM
 *		after that truncates the leaf.  A pass stops of itself before the
 *		job's timeout and at the end of the time slice, and the next turn
 *		goes on from there; after a failure, a partitioned table's passes
 *		back off as a table's runs do.  A pass that fails is a WARNING,
 *		recorded in the run history (kind 'pass'); the other leaves go on.
 *		Leaves a logical replication subscription writes into are left
 *		alone (ac_leaf_due), as a registered table's tiers are.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "commands/extension.h"
#include "postmaster/interrupt.h"
#include "pgstat.h"
#include "utils/lsyscache.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/guc.h"
#include "base/subxact.h"
#include "base/util.h"
#include "pace/replica_wait.h"
#include "partition/leaf_pass.h"
#include "partition/leaves.h"
#include "partition/run_partitioned.h"
#include "registry/config.h"
#include "registry/partitioned.h"
#include "worker/pool.h"
#include "worker/worker_job.h"
#include "worker/worker_partitioned.h"

/* A leaf due for a pass, and its partitioned table */
typedef struct AcDueLeaf
{
	Oid			root;
	Oid			leaf;
} AcDueLeaf;

/*
 * The due leaves of one registered partitioned table, appended to *due in
 * ac_cycle_cxt; none while its passes back off after failures.
 */
static void
ac_worker_root_due(Oid root, List **due)
{
	AcPartitionedConfig cfg;
	List	   *leaves;
	ListCell   *lc;
	BlockNumber tail;

	if (!ac_load_partitioned(root, &cfg) || get_rel_name(root) == NULL ||
		ac_run_backoff_until(root, AC_KIND_PASS) > GetCurrentTimestamp())
		return;
	leaves = ac_partition_leaves(&cfg);
	foreach(lc, leaves)
	{
		AcLeaf	   *l = lfirst(lc);

		if (ac_leaf_due(&cfg, l->leaf, false, NULL, &tail, NULL) != NULL)
		{
			MemoryContext oldcxt = MemoryContextSwitchTo(ac_cycle_cxt);
			AcDueLeaf  *d = palloc(sizeof(AcDueLeaf));

			d->root = cfg.relation;
			d->leaf = l->leaf;
			*due = lappend(*due, d);
			MemoryContextSwitchTo(oldcxt);
		}
	}
}

/* one partitioned table's due leaves, listed in a subtransaction */
typedef struct AcRootDue
{
	Oid			root;
	List	   *due;
} AcRootDue;

static void
ac_worker_root_due_one(void *arg)
{
	AcRootDue  *rd = (AcRootDue *) arg;

	ac_worker_root_due(rd->root, &rd->due);
}

/*
 * ac_worker_root_due() of one partitioned table in a subtransaction: an
 * error in it (its owner's) is a WARNING, and the other tables' leaves are
 * listed.  The list it returns lives in ac_cycle_cxt.
 */
static List *
ac_worker_root_due_caught(Oid root)
{
	AcRootDue	rd;
	ErrorData  *edata;

	rd.root = root;
	rd.due = NIL;
	edata = ac_subxact_call(ac_worker_root_due_one, &rd, NULL);
	if (edata != NULL)
	{
		ac_report_caught(edata, WARNING, get_rel_name(root));
		FreeErrorData(edata);
		return NIL;
	}
	return rd.due;
}

/* The due leaves of every registered partitioned table, in ac_cycle_cxt. */
static List *
ac_worker_due_leaves(void)
{
	List	   *volatile due = NIL;

	PG_TRY();
	{
		List	   *roots;
		ListCell   *lc;

		ac_begin("archive_cluster: listing partitions");
		roots = OidIsValid(get_extension_oid("archive_cluster", true)) ?
			ac_partitioned_relations() : NIL;
		foreach(lc, roots)
		{
			List	   *found = ac_worker_root_due_caught(lfirst_oid(lc));
			/* the list outlives this transaction, as its cells do */
			MemoryContext oldcxt = MemoryContextSwitchTo(ac_cycle_cxt);

			due = list_concat(due, found);
			MemoryContextSwitchTo(oldcxt);
		}
		ac_commit();
	}
	PG_CATCH();
	{
		ac_worker_log_caught("partitioned tables", NULL);
		due = NIL;
	}
	PG_END_TRY();
	return due;
}

/*
 * When a pass of this job stops of itself: before the job's timeout would
 * cancel it (a tenth of the timeout left for its last index entries and its
 * commit) and at the end of the worker's time slice; 0: never.
 */
static TimestampTz
ac_worker_pass_deadline(void)
{
	TimestampTz deadline = ac_slice_end;
	TimestampTz job = ac_job_deadline_at();

	if (job != 0)
	{
		job -= (int64) archive_cluster_job_timeout * 100 * 1000;
		if (deadline == 0 || job < deadline)
			deadline = job;
	}
	return deadline;
}

/*
 * Pass one leaf, due again in this transaction; errors recorded.  True when
 * the pass wrote rows and then gave way: the rest of the leaf is due at once.
 */
static bool
ac_worker_pass_leaf(AcDueLeaf *d)
{
	TimestampTz started = GetCurrentTimestamp();
	char	   *volatile name = NULL;
	volatile bool again = false;

	ac_job_begin(AC_JOB_RUN);
	PG_TRY();
	{
		AcPartitionedConfig cfg;
		const char *why;
		AcLeafPass	pass;
		BlockNumber tail;

		ac_begin("archive_cluster: clustering a partition");
		if (ac_load_partitioned(d->root, &cfg) && get_rel_name(d->leaf) != NULL &&
			(why = ac_leaf_due(&cfg, d->leaf, false, NULL, &tail, NULL)) != NULL)
		{
			name = MemoryContextStrdup(ac_cycle_cxt, get_rel_name(d->leaf));
			ac_pool_worker_activity(AC_ACT_ARCHIVING, d->root);
			ac_pass_leaf(&cfg, d->leaf, NIL, tail, ac_worker_pass_deadline(), &pass);
			if (pass.rows > 0 || pass.busy > 0)
				ac_log_pass(&cfg, d->leaf, why, &pass, started, "worker",
							ac_relation_owner(cfg.relation));
			if (pass.rows > 0)
				ereport(LOG,
						(errmsg("archive_cluster: clustered partition \"%s\" of \"%s\": %lld rows rewritten in %.3f s%s",
								name, get_rel_name(d->root), (long long) pass.rows,
								(GetCurrentTimestamp() - started) / 1000000.0,
								pass.gave_way ? ", then stopped (a session waited for it, or its time was up)" : "")));
			again = pass.gave_way && pass.rows > 0;
		}
		ac_commit();
		ac_job_end();
	}
	PG_CATCH();
	{
		ErrorData  *edata = ac_job_abort(name ? name : "a partition");

		ac_report_caught(edata, WARNING, name);
		ac_worker_record_error(d->root, AC_KIND_PASS, started, edata->message);
		FreeErrorData(edata);
	}
	PG_END_TRY();
	return again;
}

/*
 * The worker's passes over due leaves, until its time slice is over; true
 * when leaves were left for another turn.
 */
bool
ac_worker_partitioned(void)
{
	List	   *due = ac_worker_due_leaves();
	ListCell   *lc;

	foreach(lc, due)
	{
		bool		again;
		int64		lag;
		int			pid;

		/* a pass that gave way goes on in the next transaction, after the waiter */
		do
		{
			if (ConfigReloadPending)
			{
				ConfigReloadPending = false;
				ProcessConfigFile(PGC_SIGHUP);
				ac_worker_set_limits();
			}
			if (!archive_cluster_enabled)
				return false;
			if (ac_slice_over())
				return true;
			/* a lagging standby or subscriber: the passes wait for a later turn */
			if (ac_replicas_lag_over(&lag, &pid))
				return false;
			again = ac_worker_pass_leaf(lfirst(lc));
		} while (again);
	}
	return false;
}
