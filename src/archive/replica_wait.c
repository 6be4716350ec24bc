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
#include "storage/proc.h"
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
 * The largest WAL lag, in bytes, of a streaming WAL sender's peer: the WAL
 * flushed here (what can be sent) less what it has applied; -1 if none
 * streams or reports what it applied (pg_receivewal, a base backup).  *pid:
 * its WAL sender's.  Cascaded standbys are not seen from here.
 */
int64
ac_replica_lag(int *pid)
{
	XLogRecPtr	insert = GetFlushRecPtr(NULL);
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

/* the time waited in the current transaction, against its budget */
static LocalTransactionId ac_waited_lxid = InvalidLocalTransactionId;
static int64 ac_waited_us = 0;

/*
 * Before a batch of table relname: wait while a peer's lag exceeds the
 * bound.  False when it still does once archive_cluster.max_replica_wait
 * is spent, counted over the whole transaction (a call running several
 * tables, or batches, waits that long at most); the caller stops.
 */
bool
ac_wait_for_replicas(const char *relname)
{
	static uint32 wait_event = 0;
	LocalTransactionId lxid = ac_local_xid();
	TimestampTz started;
	int64		budget_us;
	int64		bound;
	int64		lag;
	int			pid;

	if (archive_cluster_max_replica_lag < 0)
		return true;
	bound = (int64) archive_cluster_max_replica_lag * 1024 * 1024;
	lag = ac_replica_lag(&pid);
	if (lag <= bound)
		return true;
	if (lxid == InvalidLocalTransactionId || lxid != ac_waited_lxid)
	{
		ac_waited_lxid = lxid;
		ac_waited_us = 0;
	}
	if (wait_event == 0)
		wait_event = ac_wait_event("ArchiveClusterReplicaLag");
	budget_us = (int64) archive_cluster_max_replica_wait * 1000000 - ac_waited_us;
	started = GetCurrentTimestamp();
	while (lag > bound)
	{
		TimestampTz now = GetCurrentTimestamp();

		if (now - started >= budget_us)
		{
			ac_waited_us += now - started;
			ereport(ac_is_background_worker() ? LOG : NOTICE,
					(relname ?
					 errmsg("archiving of \"%s\" stopped while a standby or subscriber lags %lld kB behind",
							relname, (long long) (lag / 1024)) :
					 errmsg("archiving stopped while a standby or subscriber lags %lld kB behind",
							(long long) (lag / 1024)),
					 errdetail("The peer of WAL sender %d did not apply the WAL down to archive_cluster.max_replica_lag (%d MB) within archive_cluster.max_replica_wait (%d s).",
							   pid, archive_cluster_max_replica_lag, archive_cluster_max_replica_wait),
					 errhint("The rows left are archived by a later run.")));
			return false;
		}
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 100, wait_event);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		lag = ac_replica_lag(&pid);
	}
	ac_waited_us += GetCurrentTimestamp() - started;
	return true;
}
