/*-------------------------------------------------------------------------
 *
 * pace.c
 *		Pacing a run or a compaction by what its WAL does to others.
 *
 *		A commit has to flush the WAL written before its commit record, a
 *		job's too, and shares the WAL device with the job's writes, so a job
 *		writing hundreds of megabytes in a few seconds makes every concurrent
 *		commit wait (docs/benchmarks.md, target 5).  ac_pace() is called for
 *		every row and index entry a job writes; it looks every 256 calls, or
 *		sooner once the job wrote AC_LOOK_WAL bytes of WAL since its last
 *		look: an index entry often writes a whole page image, and 256 of them
 *		written at once would land two megabytes in front of the next commit's
 *		WAL flush, a burst that pacing by the second does not smooth.
 *
 *		While others write (by effect: a writing transaction of others ended
 *		within the last second, since the job began; otherwise: one took a
 *		transaction ID), the job sleeps as needed to keep its own WAL under a
 *		rate.
 *		Alone, it goes at full speed.  With archive_cluster.pacing = 'effect'
 *		(the default) the rate follows what others' commits wait
 *		(commit_latency.c): every window of about a second, the job compares
 *		the p99 of the commits made while it wrote with the p99 of commits
 *		while no job wrote; above halfway to archive_cluster.max_commit_slowdown
 *		times that (1.25 at the default 1.5), the rate halves (down to
 *		archive_cluster.min_wal_rate), as TCP's congestion window does; else
 *		it grows by a tenth of the ceiling (run_max_wal_rate or
 *		compaction_max_wal_rate), by a fortieth while that p99 is above
 *		the quiet one, so as not to climb straight back into the aim.  Without
 *		the library preloaded, or with pacing = 'rate', the rate is the
 *		ceiling (the behaviour of 1.0); 'off' does not pace.
 *
 *		Paced by effect, it also has the kernel write back its relations'
 *		dirty pages as it goes (writeback.c).  It waits, within the
 *		transaction's budget, while a standby or subscriber lags more than
 *		archive_cluster.max_replica_lag (replica_wait.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "executor/instrument.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/latch.h"
#include "utils/timestamp.h"

#include "base/guc.h"
#include "pace/commit_latency.h"
#include "pace/pace.h"
#include "pace/progress.h"
#include "pace/replica_wait.h"

/* how long after the last sign of other writers a run still paces itself */
#define AC_OTHERS_RECENT_US		1000000
/* a window of the controller: at least this long, and this many commits */
#define AC_WINDOW_US			1000000
#define AC_WINDOW_MAX_US		3000000
#define AC_WINDOW_COMMITS		50
/* fewer busy commits in a window than this: too few to tell */
#define AC_WINDOW_MIN_COMMITS	10
/* fewer quiet commits than this: no baseline yet */
#define AC_BASE_COMMITS			50
/* a look at least every this many calls, and this much WAL */
#define AC_LOOK_CALLS			256
#define AC_LOOK_WAL				(128 * 1024)
/* the quantile compared */
#define AC_QUANTILE				0.99

void
ac_pace_init(AcPace *p, int rate_mb, bool always, uint32 wait_event)
{
	memset(p, 0, sizeof(AcPace));
	/* the first look after 256 calls or 128 kB of this job's WAL */
	p->look_wal = pgWalUsage.wal_bytes;
	/* the job's own commit flushes its batch: not one of the commits it watches */
	ac_commit_latency_job();
	p->rate_mb = rate_mb;
	p->always = always;
	p->wait_event = wait_event;
	p->started = GetCurrentTimestamp();
	if (archive_cluster_pacing == AC_PACING_OFF)
		p->rate_mb = 0;
	/* 0: no limit, not paced at all */
	p->effect = p->rate_mb > 0 && archive_cluster_pacing == AC_PACING_EFFECT &&
		ac_commit_latency_available();
	/* by effect: from a quarter of the ceiling, not below the floor nor above the ceiling */
	p->rate = Min(Max(p->rate_mb / 4.0, (double) archive_cluster_min_wal_rate), (double) p->rate_mb);
	p->min_rate = p->rate;
}

/* What the pacer did, for the run log. */
void
ac_pace_report(const AcPace *p, AcPaceReport *r)
{
	memset(r, 0, sizeof(AcPaceReport));
	r->effect = p->effect;
	r->paced = p->paced_us > 0;
	r->rate = p->effect ? p->rate : p->rate_mb;
	r->min_rate = p->effect ? p->min_rate : p->rate_mb;
	r->slowdowns = p->slowdowns;
	r->window_p99 = p->window_p99;
	r->base_p99 = p->base_p99;
	r->window_commits = p->window_commits;
}

/*
 * The run log's detail of a run or compaction that was paced by its effect
 * on others' commits, waited for lagging standbys or subscribers, or
 * stopped for them; NULL when none of these.
 */
char *
ac_pace_detail(const AcPaceReport *r, int64 replica_us, bool lagged)
{
	StringInfoData buf;

	if (!(r->effect && r->paced) && replica_us == 0 && !lagged)
		return NULL;
	initStringInfo(&buf);
	if (r->effect && r->paced)
	{
		appendStringInfo(&buf, "paced by commit latency: %.1f MB/s at the end, %.1f at the lowest, halved %d times",
						 r->rate, r->min_rate, r->slowdowns);
		if (r->window_commits >= AC_WINDOW_MIN_COMMITS)
			appendStringInfo(&buf, "; p99 of others' writing transactions %.2f ms in the last window, %.2f ms without jobs",
							 r->window_p99 / 1000.0, r->base_p99 / 1000.0);
	}
	if (replica_us > 0 || lagged)
		appendStringInfo(&buf, "%swaited %.1f s for a lagging standby or subscriber",
						 buf.len > 0 ? "; " : "", replica_us / 1000000.0);
	if (lagged)
		appendStringInfoString(&buf, "; " AC_STATUS_LAGGED);
	return buf.data;
}

/* After a wait for lagging peers: the rate, and a window, count from now on. */
void
ac_pace_restart(AcPace *p)
{
	p->pacing = false;
	p->window_start = 0;
}

/*
 * The controller's step at the end of a window: compare a high quantile of
 * the transactions made while jobs wrote (the p99, or with fewer than 100 in
 * the window the one its largest stands for) with the same quantile of quiet
 * times, and set the rate.  It aims halfway to the bound
 * (max_commit_slowdown): a job's p99 is made of its worst windows, and one
 * window's p99 is a histogram bucket's end, up to a quarter off.  At the
 * default 1.5 the aim is 1.25, so a window one bucket slower than quiet
 * times (1.14-1.25 times) climbs slowly and two buckets (1.33 or more)
 * halve the rate.
 */
static void
ac_pace_adjust(AcPace *p, TimestampTz now)
{
	uint64		busy[AC_LATENCY_BUCKETS];
	uint64		quiet[AC_LATENCY_BUCKETS];
	uint64		n = 0;
	uint64		nbase = 0;
	double		ceiling = p->rate_mb;
	double		step = ceiling / 10;
	double		aim = 1.0 + (archive_cluster_max_commit_slowdown - 1.0) / 2;
	double		q;
	int			i;

	ac_commit_latency_read(busy, quiet);
	for (i = 0; i < AC_LATENCY_BUCKETS; i++)
	{
		uint64		b = busy[i];

		busy[i] -= p->window_busy[i];
		p->window_busy[i] = b;
		n += busy[i];
	}
	p->window_start = now;
	p->window_commits = n;
	if (n >= AC_WINDOW_MIN_COMMITS)
	{
		q = Min(AC_QUANTILE, 1.0 - 1.0 / n);
		p->window_p99 = ac_latency_quantile(busy, q, &n);
		p->base_p99 = ac_latency_quantile(quiet, q, &nbase);
		if (nbase >= AC_BASE_COMMITS && p->window_p99 > aim * p->base_p99)
		{
			double		rate = Min(Max(p->rate / 2, (double) archive_cluster_min_wal_rate), ceiling);

			if (rate < p->rate)
				p->slowdowns++;
			p->rate = rate;
			p->min_rate = Min(p->min_rate, p->rate);
			p->pacing = false;	/* the new rate counts from now */
			elog(DEBUG1, "archive_cluster pacer: p99 %.2f ms of %llu commits, %.2f ms of %llu without jobs: %s %.1f MB/s",
				 p->window_p99 / 1000.0, (unsigned long long) n, p->base_p99 / 1000.0,
				 (unsigned long long) nbase,
				 p->rate == archive_cluster_min_wal_rate && p->rate < ceiling ? "at the floor," : "halved to",
				 p->rate);
			return;
		}

		/*
		 * Slower than without jobs, though not past the aim: a quarter of
		 * the step, so that the rate does not climb straight back into it
		 * and hover there.
		 */
		if (nbase >= AC_BASE_COMMITS && p->window_p99 > p->base_p99)
			step = ceiling / 40;
	}
	/* fine, or too few to tell (few others write, no baseline yet): faster */
	p->rate = Min(p->rate + step, ceiling);
	p->pacing = false;
	if (n < AC_WINDOW_MIN_COMMITS)
		elog(DEBUG1, "archive_cluster pacer: %llu commits, too few to tell: %.1f MB/s",
			 (unsigned long long) n, p->rate);
	else
		elog(DEBUG1, "archive_cluster pacer: p99 %.2f ms of %llu commits, %.2f ms of %llu without jobs: %s%.1f MB/s",
			 p->window_p99 / 1000.0, (unsigned long long) n, p->base_p99 / 1000.0,
			 (unsigned long long) nbase, step < ceiling / 10 ? "above quiet times, " : "", p->rate);
}

/* What sets the rate now, among other writers. */
static AcPaceReason
ac_pace_reason(const AcPace *p)
{
	if (!p->effect)
		return AC_PACE_RATE;
	if (p->rate >= p->rate_mb)
		return AC_PACE_CEILING;
	if (p->rate <= archive_cluster_min_wal_rate)
		return AC_PACE_FLOOR;
	return AC_PACE_COMMITS;
}

/*
 * Did others write within the last second?
 *
 * By effect, others are the processes whose writing transactions ended
 * (committed or prepared) within it, since the job began (commit_latency.c):
 * clients, procedures, logical replication's apply, pg_cron; not a VACUUM,
 * nor autovacuum, whose ANALYZE takes a transaction ID (a run alone paced
 * itself for one: 0.95 s of a 3.25-s run in the bench), nor
 * archive_cluster's own jobs and workers.  A write that ended before the
 * job began (the statement before it in the same session, pg_cron's log of
 * the job starting) does not count; a writer that goes on is seen at its
 * next commit, and one transaction that writes for long when it ends.
 *
 * Otherwise (pacing = 'rate', as 1.0), others began writing: took a
 * transaction ID.  The first look has nothing to compare with: no.  Nor has
 * a look after our own transaction or subtransaction took one (at the job's
 * first write): the IDs taken since the last look are then not all others',
 * and the next look counts from here.  (A subtransaction of the owner's code
 * that writes, a CHECK function's exception block, is taken for another
 * writer's.)
 */
static bool
ac_pace_others_write(AcPace *p, TimestampTz now)
{
	FullTransactionId next;
	FullTransactionId own;
	bool		seen;

	if (p->effect)
	{
		TimestampTz last = ac_commit_latency_last_write();

		/* last > now: the clock was set back, and no write since tells */
		return last >= p->started && last <= now && now - last <= AC_OTHERS_RECENT_US;
	}

	next = ReadNextFullTransactionId();
	own = GetCurrentFullTransactionIdIfAny();
	seen = FullTransactionIdEquals(own, p->own_xid) &&
		U64FromFullTransactionId(next) != U64FromFullTransactionId(p->next_xid);
	p->own_xid = own;
	p->next_xid = next;
	if (seen && p->looks > 1)
		p->others_seen = now;
	return p->looks != 1 && now - p->others_seen <= AC_OTHERS_RECENT_US;
}

void
ac_pace(AcPace *p)
{
	TimestampTz now;
	double		ahead_ms;
	int64		waited = p->replica_us;
	int64		lag;
	int			pid;
	bool		others;

	if (++p->calls - p->look_calls < AC_LOOK_CALLS &&
		pgWalUsage.wal_bytes - p->look_wal < AC_LOOK_WAL)
		return;
	p->looks++;
	p->look_calls = p->calls;
	p->look_wal = pgWalUsage.wal_bytes;
	/* a lagging peer first: the rate counts from after the wait */
	if (!p->no_replica_wait)
		(void) ac_wait_for_replicas(0, &p->replica_us, &lag, &pid);
	if (p->replica_us != waited)
		ac_pace_restart(p);
	/* before the clock is read: its time is not the rate's */
	if (p->effect)
		ac_writeback(&p->wb);
	now = GetCurrentTimestamp();
	others = ac_pace_others_write(p, now);
	/*
	 * Commits until a second from now are made while a job writes, whatever
	 * its pacing: alone too, so that the first commit of a writer who comes
	 * is not taken for a quiet one.
	 */
	ac_commit_latency_busy(now + AC_OTHERS_RECENT_US);
	if (p->rate_mb <= 0)
	{
		ac_progress_pace(0, AC_PACE_OFF, p->paced_us);
		return;
	}
	/* alone (a compaction under pacing = 'rate' paces anyway, as 1.0) */
	if (!others && !(p->always && !p->effect))
	{
		p->pacing = false;
		p->window_start = 0;
		ac_progress_pace(0, AC_PACE_ALONE, p->paced_us);
		return;
	}
	if (p->effect)
	{
		if (p->window_start == 0)
		{
			/* the first window: from now */
			ac_commit_latency_read(p->window_busy, NULL);
			p->window_start = now;
		}
		else if (now - p->window_start >= AC_WINDOW_US)
		{
			uint64		busy[AC_LATENCY_BUCKETS];
			uint64		n = 0;
			int			i;

			ac_commit_latency_read(busy, NULL);
			for (i = 0; i < AC_LATENCY_BUCKETS; i++)
				n += busy[i] - p->window_busy[i];
			if (n >= AC_WINDOW_COMMITS || now - p->window_start >= AC_WINDOW_MAX_US)
				ac_pace_adjust(p, now);
		}
	}
	ac_progress_pace(p->effect ? p->rate : p->rate_mb, ac_pace_reason(p), p->paced_us);
	if (!p->pacing)
	{
		p->pacing = true;
		p->pace_start = now;
		p->pace_wal = pgWalUsage.wal_bytes;
		return;
	}
	ahead_ms = (double) (pgWalUsage.wal_bytes - p->pace_wal) * 1000.0 /
		((p->effect ? p->rate : p->rate_mb) * 1048576.0) -
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
