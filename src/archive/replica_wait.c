/*-------------------------------------------------------------------------
 *
 * replica_wait.c
 *		Waiting, before a batch, for the standbys and subscribers that lag
 *		too far behind.
 *
 *		A run writes a few hundred megabytes of WAL per batch; a standby
 *		that replays slower than the primary writes falls behind by as much.
 *		Before each batch, a run looks at every WAL sender that streams
 *		(physical standbys and logical subscribers, as pg_stat_replication
 *		shows them) and, while the WAL not yet applied by one of them
 *		exceeds archive_cluster.max_replica_lag, waits, holding nothing a
 *		worker's batch has not yet taken, at most
 *		archive_cluster.max_replica_wait seconds; then it stops with the
 *		rest left for its next turn.  A standby that is down, or a slot
 *		without a connected subscriber, is not waited for: waiting could not
 *		help it, and max_slot_wal_keep_size bounds what it keeps.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog.h"
#include "miscadmin.h"
#include "replication/walsender.h"
#include "replication/walsender_private.h"
#include "storage/latch.h"
#include "storage/spin.h"
#include "utils/timestamp.h"
#include "utils/wait_event.h"

#include "compat.h"
#include "archive/replica_wait.h"
#include "base/guc.h"

/*
 * The largest WAL lag, in bytes, of a streaming WAL sender's peer: our
 * insert position less what it has applied; -1 if none streams.  *pid: its
 * WAL sender's.
 */
int64
ac_replica_lag(int *pid)
{
	XLogRecPtr	insert = GetXLogInsertRecPtr();
	int64		lag = -1;
	int			i;

	*pid = 0;
	if (WalSndCtl == NULL)
		return -1;
	for (i = 0; i < max_wal_senders; i++)
	{
		WalSnd	   *w = &WalSndCtl->walsnds[i];
		pid_t		wpid;
		WalSndState state;
		XLogRecPtr	apply;

		SpinLockAcquire(&w->mutex);
		wpid = w->pid;
		state = w->state;
		apply = w->apply;
		SpinLockRelease(&w->mutex);
		if (wpid == 0 || (state != WALSNDSTATE_STREAMING && state != WALSNDSTATE_CATCHUP) ||
			XLogRecPtrIsInvalid(apply) || apply >= insert)
			continue;
		if ((int64) (insert - apply) > lag)
		{
			lag = (int64) (insert - apply);
			*pid = (int) wpid;
		}
	}
	return lag;
}

/*
 * Before a batch: wait while a peer's lag exceeds the bound.  False when it
 * still does after archive_cluster.max_replica_wait (the caller stops).
 */
bool
ac_wait_for_replicas(void)
{
	static uint32 wait_event = 0;
	TimestampTz deadline = 0;
	int64		bound;
	int64		lag;
	int			pid;

	if (archive_cluster_max_replica_lag < 0)
		return true;
	bound = (int64) archive_cluster_max_replica_lag * 1024 * 1024;
	lag = ac_replica_lag(&pid);
	if (lag <= bound)
		return true;
	if (wait_event == 0)
		wait_event = ac_wait_event("ArchiveClusterReplicaLag");
	ereport(DEBUG1,
			(errmsg_internal("archive_cluster: waiting for the peer of WAL sender %d, %lld bytes behind",
							 pid, (long long) lag)));
	deadline = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
										   archive_cluster_max_replica_wait * 1000L);
	while (lag > bound)
	{
		if (GetCurrentTimestamp() >= deadline)
		{
			ereport(LOG,
					(errmsg("archive_cluster: archiving stopped while a replica lags %lld MB behind",
							(long long) (lag / (1024 * 1024))),
					 errdetail("The peer of WAL sender %d has not applied the WAL within archive_cluster.max_replica_wait (%d s) of archive_cluster.max_replica_lag (%d MB).",
							   pid, archive_cluster_max_replica_wait, archive_cluster_max_replica_lag)));
			return false;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100, wait_event);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		lag = ac_replica_lag(&pid);
	}
	return true;
}
