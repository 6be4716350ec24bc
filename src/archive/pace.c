/*-------------------------------------------------------------------------
 *
 * pace.c
 *		Pacing a run or a compaction by the WAL it writes.
 *
 *		A commit has to flush the WAL written before its commit record, a
 *		run's too, so a run writing hundreds of megabytes in a few seconds
 *		makes every concurrent commit wait (docs/benchmarks.md, target 5).
 *		A run is paced while other transactions began writing (took a
 *		transaction ID) within the last second: it sleeps as needed to keep
 *		its own WAL under its rate; alone, it goes at full speed.  A
 *		compaction, which nobody waits for, is paced always.  ac_pace() is
 *		called for every row and index entry written; it looks every 256.
 *		It also waits, within the transaction's budget, while a standby or
 *		subscriber lags more than archive_cluster.max_replica_lag
 *		(replica_wait.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timestamp.h"

#include "archive/pace.h"
#include "archive/replica_wait.h"

/* how long after the last sign of other writers a run still paces itself */
#define AC_OTHERS_RECENT_US		1000000

void
ac_pace_init(AcPace *p, int rate_mb, bool always, uint32 wait_event)
{
	memset(p, 0, sizeof(AcPace));
	p->rate_mb = rate_mb;
	p->always = always;
	p->wait_event = wait_event;
}

void
ac_pace(AcPace *p)
{
	FullTransactionId next;
	TimestampTz now;
	uint64		assigned;
	double		ahead_ms;
	int64		waited = p->replica_us;
	int64		lag;
	int			pid;

	if (++p->calls % 256 != 0)
		return;
	/* a lagging peer first: the rate counts from after the wait */
	(void) ac_wait_for_replicas(0, &p->replica_us, &lag, &pid);
	if (p->replica_us != waited)
		ac_pace_restart(p);
	if (p->rate_mb <= 0)
		return;
	now = GetCurrentTimestamp();
	if (!p->always)
	{
		next = ReadNextFullTransactionId();
		if (p->calls == 256)
			assigned = 0;		/* first look: nothing to compare with */
		else
			assigned = U64FromFullTransactionId(next) - U64FromFullTransactionId(p->next_xid);
		/* our own transaction ID, assigned at the first write */
		if (!p->had_xid && FullTransactionIdIsValid(GetTopFullTransactionIdIfAny()))
		{
			p->had_xid = true;
			if (assigned > 0)
				assigned--;
		}
		p->next_xid = next;
		if (assigned > 0)
			p->others_seen = now;
		if (p->calls == 256 || now - p->others_seen > AC_OTHERS_RECENT_US)
		{
			p->pacing = false;
			return;
		}
	}
	if (!p->pacing)
	{
		p->pacing = true;
		p->pace_start = now;
		p->pace_wal = pgWalUsage.wal_bytes;
		return;
	}
	ahead_ms = (double) (pgWalUsage.wal_bytes - p->pace_wal) * 1000.0 /
		(p->rate_mb * 1048576.0) -
		(double) (now - p->pace_start) / 1000.0;
	if (ahead_ms >= 1.0)
	{
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 (long) Min(ahead_ms, 1000.0), p->wait_event);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
		p->paced_us += GetCurrentTimestamp() - now;
	}
}

/* After a wait for lagging peers: the rate is measured from now on. */
void
ac_pace_restart(AcPace *p)
{
	p->pacing = false;
}
