/*-------------------------------------------------------------------------
 *
 * replica_wait.c
 *		Waiting for the standbys and subscribers that lag too far behind.
 *
 *		A run writes a few hundred megabytes of WAL per batch; a standby
 *		that replays slower than the primary writes falls behind by as much.
 *		A run or a compaction looks at every WAL sender that streams
 *		(physical standbys and logical subscribers, as pg_stat_replication
 *		shows them) and, while the WAL not yet applied by one of them exceeds
 *		archive_cluster.max_replica_lag, waits: before a batch, and while it
 *		writes (pace.c).  A call waits at most archive_cluster.max_replica_wait
 *		in all per transaction, then stops before its next batch; the worker
 *		waits between its batches' transactions, at most until its time slice
 *		ends (worker.c).  A standby that is down, or a slot without a
 *		connected subscriber, is not waited for: waiting could not help it,
 *		and max_slot_wal_keep_size bounds what it keeps.  Cascaded standbys
 *		are not seen from here.
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
#include "pace/progress.h"
#include "pace/replica_wait.h"
#include "base/guc.h"

/*
 * The largest WAL lag, in bytes, of a streaming WAL sender's peer: the WAL
 * flushed here (what can be sent) less what it has applied; -1 if none
 * streams or reports what it applied (pg_receivewal, a base backup).  *pid:
 * its WAL sender's.
 */
int64
ac_replica_lag(int *pid)
{
	XLogRecPtr	flushed = GetFlushRecPtr(NULL);
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
			XLogRecPtrIsInvalid(apply) || apply >= flushed)
			continue;
		if ((int64) (flushed - apply) > lag)
		{
			lag = (int64) (flushed - apply);
			*pid = (int) wpid;
		}
	}
	return lag;
}

/* True when a streaming peer lags more than archive_cluster.max_replica_lag. */
bool
ac_replicas_lag_over(int64 *lag, int *pid)
{
	if (archive_cluster_max_replica_lag < 0)
	{
		*lag = -1;
		*pid = 0;
		return false;
	}
	*lag = ac_replica_lag(pid);
	return *lag > (int64) archive_cluster_max_replica_lag * 1024 * 1024;
}

/* the time waited in the current transaction, against its budget */
static LocalTransactionId ac_waited_lxid = InvalidLocalTransactionId;
static int64 ac_waited_us = 0;
/* the worker's bound of a wait inside its transactions (0: none) */
static TimestampTz ac_wait_cap = 0;

/* The time waited in the current transaction so far. */
int64
ac_replica_waited_in_xact(void)
{
	return ac_waited_lxid == ac_local_xid() ? ac_waited_us : 0;
}

/*
 * The worker bounds the waits inside its jobs' transactions (by its time
 * slice and the job's deadline): until "cap", 0 for none.
 */
void
ac_replica_wait_cap(TimestampTz cap)
{
	ac_wait_cap = cap;
}

/*
 * Wait while a peer's lag exceeds the bound, until "until", or, when it is
 * 0, while the transaction's budget (archive_cluster.max_replica_wait in
 * all, and the worker's cap) lasts.  True when the lag is within the bound;
 * false when it still exceeds it at the end, *lag and *pid then telling the
 * peer.  The time waited is added to *waited_us.
 */
bool
ac_wait_for_replicas(TimestampTz until, int64 *waited_us, int64 *lag, int *pid)
{
	static uint32 wait_event = 0;
	TimestampTz started;
	TimestampTz now;
	bool		in_budget = (until == 0);
	bool		over = true;

	if (!ac_replicas_lag_over(lag, pid))
		return true;
	started = GetCurrentTimestamp();
	if (in_budget)
	{
		LocalTransactionId lxid = ac_local_xid();

		if (lxid == InvalidLocalTransactionId || lxid != ac_waited_lxid)
		{
			ac_waited_lxid = lxid;
			ac_waited_us = 0;
		}
		until = started + (int64) archive_cluster_max_replica_wait * USECS_PER_SEC - ac_waited_us;
		if (ac_wait_cap != 0)
			until = Min(until, ac_wait_cap);
	}
	if (started >= until)
		return false;			/* no time left: nothing waited */
	if (wait_event == 0)
		wait_event = ac_wait_event("ArchiveClusterReplicaLag");
	ac_progress_waiting(true, *lag, 0);
	do
	{
		now = GetCurrentTimestamp();
		if (now >= until)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 (long) Min(100, (until - now) / 1000 + 1), wait_event);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		over = ac_replicas_lag_over(lag, pid);
		if (over)
			ac_progress_waiting(true, *lag, 0);
	} while (over);
	now = GetCurrentTimestamp();
	ac_progress_waiting(false, 0, now - started);
	*waited_us += now - started;
	if (in_budget)
		ac_waited_us += now - started;
	return !over;
}

/*
 * A call's wait before a batch of a run (compaction: of a compaction) of
 * table relname: false, with a NOTICE naming the table and the peer, when
 * the lag still exceeds the bound once the transaction's budget is spent;
 * the caller stops.
 */
bool
ac_call_wait_for_replicas(const char *relname, bool compaction, int64 *waited_us)
{
	int64		lag;
	int			pid;
	int64		waited = 0;
	bool		fine;

	fine = ac_wait_for_replicas(0, &waited, &lag, &pid);
	*waited_us += waited;
	if (!fine)
		ac_report_replica_lag(NOTICE, relname, compaction, lag, pid, waited);
	return fine;
}

/*
 * Tell that archiving (compaction: compaction) of relname (NULL: of a
 * database) stops for a peer's lag, after waiting waited_us.
 */
void
ac_report_replica_lag(int elevel, const char *relname, bool compaction, int64 lag, int pid,
					  int64 waited_us)
{
	ereport(elevel,
			(relname == NULL ?
			 errmsg("archiving stopped while a standby or subscriber lags %lld kB behind",
					(long long) (lag / 1024)) :
			 compaction ?
			 errmsg("compaction of \"%s\" stopped while a standby or subscriber lags %lld kB behind",
					relname, (long long) (lag / 1024)) :
			 errmsg("archiving of \"%s\" stopped while a standby or subscriber lags %lld kB behind",
					relname, (long long) (lag / 1024)),
			 errdetail("The peer of WAL sender %d has more than archive_cluster.max_replica_lag (%d MB) left to apply after %.1f s of waiting.",
					   pid, archive_cluster_max_replica_lag, waited_us / 1000000.0),
			 compaction ?
			 errhint("A later compaction takes the loose pages.") :
			 errhint("The rows left are archived by a later run.")));
}
