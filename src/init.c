/*-------------------------------------------------------------------------
 *
 * init.c
 *		Module entry point of archive_cluster.
 *
 *		archive_cluster keeps a big, append-mostly table fast for per-key
 *		range reads by moving its older rows, in batches sorted by a cluster
 *		key, into <t>_archive (src/README.md: the layout of the sources).
 *		See admin/register.c, view/triggers.c and archive/run.c; with the
 *		library in shared_preload_libraries, a launcher and a bounded pool of
 *		short-lived workers archive by themselves (worker/).  Row locks
 *		through a registered view are refused in any session that loaded the
 *		library (view/row_locks.c); in table mode, rows written to a tier are
 *		checked against the other tier once the executor is done with them
 *		(table/tier_guard.c), and INSERT ... ON CONFLICT looks for conflicts
 *		among archived rows (table/on_conflict.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "miscadmin.h"

#include "base/guc.h"
#include "pace/commit_latency.h"
#include "pace/progress.h"
#include "partition/run_partitioned.h"
#include "table/key_range.h"
#include "worker/launcher.h"
#include "table/on_conflict.h"
#include "worker/pool.h"
#include "view/row_locks.h"
#include "table/tier_guard.h"
#include "table/tier_lock_order.h"
#include "table/tier_lookup.h"
#include "plan/probe.h"
#include "worker/utility.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

void
_PG_init(void)
{
	ac_define_gucs();
	/* in every session that loads the library, preloaded or not */
	ac_row_locks_install();
	ac_on_conflict_install();
	ac_guard_install();
	ac_lock_order_install();
	ac_tier_lookup_install();
	ac_probe_install();
	/* archive_cluster_run() on a partitioned table: archive/ calls up into partition/ */
	ac_partitioned_run_hook = ac_run_partitioned_call;
	if (process_shared_preload_libraries_in_progress)
	{
		ac_pool_init_hooks();
		ac_key_range_init_hooks();
		ac_commit_latency_init_hooks();
		ac_progress_init_hooks();
		/* no workers in pg_upgrade's servers, as core's logical replication launcher */
		if (!IsBinaryUpgrade)
			ac_launcher_register();
		ac_utility_hook_install();
	}
}
