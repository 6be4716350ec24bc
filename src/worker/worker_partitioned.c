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
 *		after that truncates the leaf.  A pass that fails is a WARNING,
 *		recorded in the run history (kind 'pass'); the other leaves go on.
 *		Leaves a logical replication subscription writes into are left
 *		alone (ac_leaf_due), as a registered table's tiers are.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/extension.h"
#include "pgstat.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/timestamp.h"

#include "base/util.h"
#include "partition/leaf_pass.h"
#include "partition/leaves.h"
#include "partition/run_partitioned.h"
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

/* The due leaves of every registered partitioned table, in ac_cycle_cxt. */
static List *
ac_worker_due_leaves(void)
{
	List	   *due = NIL;

	PG_TRY();
	{
		List	   *roots;
		ListCell   *lc;

		ac_begin("archive_cluster: listing partitions");
		roots = OidIsValid(get_extension_oid("archive_cluster", true)) ?
			ac_partitioned_relations() : NIL;
		foreach(lc, roots)
		{
			AcPartitionedConfig cfg;
			List	   *leaves;
			ListCell   *ll;

			if (!ac_load_partitioned(lfirst_oid(lc), &cfg))
				continue;
			leaves = ac_partition_leaves(&cfg);
			foreach(ll, leaves)
			{
				AcLeaf	   *l = lfirst(ll);

				if (ac_leaf_due(&cfg, l->leaf, false, NULL) != NULL)
				{
					MemoryContext oldcxt = MemoryContextSwitchTo(ac_cycle_cxt);
					AcDueLeaf  *d = palloc(sizeof(AcDueLeaf));

					d->root = cfg.relation;
					d->leaf = l->leaf;
					due = lappend(due, d);
					MemoryContextSwitchTo(oldcxt);
				}
			}
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

		ac_begin("archive_cluster: clustering a partition");
		if (ac_load_partitioned(d->root, &cfg) && get_rel_name(d->leaf) != NULL &&
			(why = ac_leaf_due(&cfg, d->leaf, false, NULL)) != NULL)
		{
			name = MemoryContextStrdup(ac_cycle_cxt, get_rel_name(d->leaf));
			ac_pool_worker_activity(AC_ACT_ARCHIVING, d->root);
			ac_pass_leaf(&cfg, d->leaf, NIL, &pass);
			if (pass.rows > 0 || pass.busy > 0)
				ac_log_pass(&cfg, d->leaf, why, &pass, started, "worker",
							ac_relation_owner(cfg.relation));
			if (pass.rows > 0)
				ereport(LOG,
						(errmsg("archive_cluster: clustered partition \"%s\" of \"%s\": %lld rows rewritten in %.3f s%s",
								name, get_rel_name(d->root), (long long) pass.rows,
								(GetCurrentTimestamp() - started) / 1000000.0,
								pass.gave_way ? ", then gave way to a lock request" : "")));
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

		/* a pass that gave way goes on in the next transaction, after the waiter */
		do
		{
			if (ac_slice_over())
				return true;
			again = ac_worker_pass_leaf(lfirst(lc));
		} while (again);
	}
	return false;
}
