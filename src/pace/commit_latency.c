/*-------------------------------------------------------------------------
 *
 * commit_latency.c
 *		What other sessions' commits wait, for the pacer (pace.c).
 *
 *		With the library preloaded, every client session times its
 *		transactions that wrote, from the start of their last statement to
 *		the end of their commit (the commit record's WAL flush, and a
 *		synchronous standby's answer, included): for a statement in
 *		autocommit, what its client waits, less the network.  Each is
 *		counted in one of two histograms in shared memory: "busy" while a run or compaction writes (each pacer
 *		marks how long it writes, ac_commit_latency_busy), "quiet" otherwise.
 *		The quiet histogram halves its counts for every AC_QUIET_EPOCH_US gone
 *		by at its next quiet commit, so that it tells how long commits take
 *		when no job writes, lately; while jobs write it is left as it was.  A pacer
 *		compares the busy commits of its last window with the quiet ones.
 *		The commits of the jobs themselves are not counted.
 *
 *		Buckets are quarters of powers of two of microseconds; a few atomic
 *		additions per commit, no lock.  Without the library preloaded there
 *		is nothing to read (ac_commit_latency_available).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/transam.h"
#include "access/xact.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "port/pg_bitutils.h"
#include "postmaster/bgworker.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "pace/commit_latency.h"

PG_FUNCTION_INFO_V1(archive_cluster_commit_latency);

/* how many microseconds of quiet commits halve the quiet histogram */
#define AC_QUIET_EPOCH_US		(4 * USECS_PER_SEC)
/* a job moves busy_until only when it is this much short of its new end */
#define AC_BUSY_SLACK_US		100000
/* a writing transaction moves last_write only when it is this much older */
#define AC_WRITE_SLACK_US		10000

typedef struct AcCommitLatency
{
	/* each on a cache line of its own: every commit reads the first */
	union
	{
		pg_atomic_uint64 v;		/* TimestampTz: a job writes until then */
		char		pad[PG_CACHE_LINE_SIZE];
	}			busy_until;
	union
	{
		pg_atomic_uint64 v;		/* TimestampTz of the last halving */
		char		pad[PG_CACHE_LINE_SIZE];
	}			quiet_epoch;
	union
	{
		pg_atomic_uint64 v;		/* TimestampTz: others' writing transaction last ended */
		char		pad[PG_CACHE_LINE_SIZE];
	}			last_write;
	pg_atomic_uint64 quiet[AC_LATENCY_BUCKETS];
	pg_atomic_uint64 busy[AC_LATENCY_BUCKETS];
} AcCommitLatency;

static AcCommitLatency *ac_latency = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* this session's commit being timed (0: none) */
static TimestampTz ac_commit_started = 0;
/* the start of the statement whose transaction ended last */
static TimestampTz ac_statement_ended = 0;
/* this session's transaction is a job's: its commit is not counted */
static bool ac_commit_is_job = false;
/* this process's transaction wrote, and counts as others' writing (ac_latency_writer_counts) */
static bool ac_commit_writes = false;

/*
 * The bucket of a latency in microseconds: 0 below 16, then four per power
 * of two (quarters of it: no bucket is more than 25% wide).
 */
static int
ac_latency_bucket(int64 us)
{
	int			k;
	int			b;

	if (us < 16)
		return 0;
	k = pg_leftmost_one_pos64((uint64) us);
	b = 1 + 4 * (k - 4) + (int) (((us - ((int64) 1 << k)) * 4) >> k);
	return Min(b, AC_LATENCY_BUCKETS - 1);
}

/* the upper end of bucket b, in microseconds (the last: twice its start) */
static double
ac_latency_bucket_end(int b)
{
	int			k;

	if (b >= AC_LATENCY_BUCKETS - 1)
		return 2.0 * ac_latency_bucket_end(AC_LATENCY_BUCKETS - 2);
	/* bucket b + 1 begins where b ends */
	b++;
	k = 4 + (b - 1) / 4;
	return (double) ((int64) 1 << k) * (1.0 + ((b - 1) % 4) / 4.0);
}

/*
 * Halve the quiet counts once per epoch gone by (the session that moves the
 * epoch does it); each bucket by a compare-and-exchange, so that two
 * sessions halving at once cannot take more than it holds.
 */
static void
ac_latency_decay(TimestampTz now)
{
	uint64		epoch = pg_atomic_read_u64(&ac_latency->quiet_epoch.v);
	int64		epochs;
	int			i;

	if ((uint64) now < epoch + AC_QUIET_EPOCH_US ||
		!pg_atomic_compare_exchange_u64(&ac_latency->quiet_epoch.v, &epoch, (uint64) now))
		return;
	epochs = epoch == 0 ? 1 : ((uint64) now - epoch) / AC_QUIET_EPOCH_US;
	for (i = 0; i < AC_LATENCY_BUCKETS; i++)
	{
		uint64		v = pg_atomic_read_u64(&ac_latency->quiet[i]);

		while (!pg_atomic_compare_exchange_u64(&ac_latency->quiet[i], &v,
												epochs >= 64 ? 0 : v >> epochs))
			;
	}
}

static void
ac_latency_count(int64 us, TimestampTz now)
{
	int			b = ac_latency_bucket(us);

	if ((uint64) now < pg_atomic_read_u64(&ac_latency->busy_until.v))
		(void) pg_atomic_fetch_add_u64(&ac_latency->busy[b], 1);
	else
	{
		ac_latency_decay(now);
		(void) pg_atomic_fetch_add_u64(&ac_latency->quiet[b], 1);
	}
}

/* Does this process's writing count as others' for the jobs? */
static bool
ac_latency_writer_counts(void)
{
	static int	counts = -1;

	if (counts < 0)
		counts = !(MyBackendType == B_AUTOVAC_WORKER ||
				   (MyBgworkerEntry != NULL &&
					strncmp(MyBgworkerEntry->bgw_type, "archive_cluster", 15) == 0));
	return counts;
}

/*
 * Others wrote: move last_write to now, when it is AC_WRITE_SLACK_US older
 * (a racing older value only makes it a little earlier), or later than now
 * (the clock was set back).
 */
static void
ac_latency_wrote(TimestampTz now)
{
	uint64		last = pg_atomic_read_u64(&ac_latency->last_write.v);

	if ((uint64) now > last + AC_WRITE_SLACK_US || (uint64) now < last)
		pg_atomic_write_u64(&ac_latency->last_write.v, (uint64) now);
}

/*
 * Client sessions time their transactions that wrote: from the start of
 * their last statement to the end of the commit.  In autocommit that is the
 * whole statement, as its client waits for it; an explicit COMMIT, the
 * commit alone (a client's think time inside a transaction is not counted).
 * One transaction per statement at most, the first, and none committed by
 * a procedure (CALL, DO: its COMMITs, the first too, would count all its
 * work since the CALL; a CALL that does not commit is timed as any
 * statement); the later transactions of a statement that runs
 * several (VACUUM or ANALYZE of many tables, CREATE INDEX CONCURRENTLY), are
 * not timed; counted from the statement's start, each would look as long as
 * the statement had run so far.  Background workers (logical replication's
 * apply, the jobs themselves) are not timed.  Every process's writing
 * transaction, timed or not, also tells the jobs that others write
 * (last_write), but a job's, autovacuum's and archive_cluster's workers'.
 */
static void
ac_latency_xact_callback(XactEvent event, void *arg)
{
	TimestampTz stmt_start;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			/* not a VACUUM's transaction (it takes an ID to truncate a table) */
			ac_commit_writes = !ac_commit_is_job &&
				FullTransactionIdIsValid(GetTopFullTransactionIdIfAny()) &&
				(MyProc->statusFlags & PROC_IN_VACUUM) == 0 &&
				ac_latency_writer_counts();
			ac_commit_started = 0;
			if (event == XACT_EVENT_PRE_PREPARE)
				break;
			stmt_start = GetCurrentStatementStartTimestamp();
			if (!ac_commit_is_job && MyBackendType == B_BACKEND &&
				FullTransactionIdIsValid(GetTopFullTransactionIdIfAny()) &&
				stmt_start >= GetCurrentTransactionStartTimestamp() &&
				stmt_start != ac_statement_ended &&
				!SPI_inside_nonatomic_context())
				ac_commit_started = stmt_start;
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PREPARE:
			if ((ac_commit_started != 0 || ac_commit_writes) && ac_latency != NULL)
			{
				TimestampTz now = GetCurrentTimestamp();

				if (ac_commit_started != 0)
					ac_latency_count(now - ac_commit_started, now);
				if (ac_commit_writes)
					ac_latency_wrote(now);
			}
			ac_commit_started = 0;
			ac_commit_writes = false;
			ac_commit_is_job = false;
			ac_statement_ended = GetCurrentStatementStartTimestamp();
			break;
		case XACT_EVENT_ABORT:
			ac_statement_ended = GetCurrentStatementStartTimestamp();
			ac_commit_started = 0;
			ac_commit_writes = false;
			ac_commit_is_job = false;
			break;
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PARALLEL_COMMIT:
			ac_commit_started = 0;
			ac_commit_writes = false;
			ac_commit_is_job = false;
			break;
		default:
			break;
	}
}

static void
ac_latency_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(AcCommitLatency)));
}

static void
ac_latency_startup(void)
{
	bool		found;
	int			i;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ac_latency = ShmemInitStruct("archive_cluster commit latency", sizeof(AcCommitLatency), &found);
	if (!found)
	{
		pg_atomic_init_u64(&ac_latency->busy_until.v, 0);
		pg_atomic_init_u64(&ac_latency->quiet_epoch.v, 0);
		pg_atomic_init_u64(&ac_latency->last_write.v, 0);
		for (i = 0; i < AC_LATENCY_BUCKETS; i++)
		{
			pg_atomic_init_u64(&ac_latency->quiet[i], 0);
			pg_atomic_init_u64(&ac_latency->busy[i], 0);
		}
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Called from _PG_init() while preloading: shared memory and every session's timing. */
void
ac_commit_latency_init_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ac_latency_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ac_latency_startup;
	RegisterXactCallback(ac_latency_xact_callback, NULL);
}

/* Whether commits are timed: the library was preloaded. */
bool
ac_commit_latency_available(void)
{
	return ac_latency != NULL;
}

/*
 * When a writing transaction of others last committed or prepared: any
 * process's that took a transaction ID (a client's, a procedure's, logical
 * replication's apply, pg_cron's), not a job's, a VACUUM's, autovacuum's or
 * archive_cluster's workers'.  0: none since start-up.
 */
TimestampTz
ac_commit_latency_last_write(void)
{
	return ac_latency == NULL ? 0 : (TimestampTz) pg_atomic_read_u64(&ac_latency->last_write.v);
}

/* This session's transaction is a job's: its commit is not counted. */
void
ac_commit_latency_job(void)
{
	ac_commit_is_job = true;
}

/*
 * A job writes among others until "until": commits till then are busy.
 * The shared end moves only when it is AC_BUSY_SLACK_US short, so that a
 * job does not write that cache line at every look.
 */
void
ac_commit_latency_busy(TimestampTz until)
{
	uint64		cur;

	if (ac_latency == NULL)
		return;
	cur = pg_atomic_read_u64(&ac_latency->busy_until.v);
	while (cur + AC_BUSY_SLACK_US < (uint64) until &&
		   !pg_atomic_compare_exchange_u64(&ac_latency->busy_until.v, &cur, (uint64) until))
		;
}

/* Copies of the histograms (either may be NULL). */
void
ac_commit_latency_read(uint64 *busy, uint64 *quiet)
{
	int			i;

	for (i = 0; i < AC_LATENCY_BUCKETS; i++)
	{
		if (busy)
			busy[i] = ac_latency ? pg_atomic_read_u64(&ac_latency->busy[i]) : 0;
		if (quiet)
			quiet[i] = ac_latency ? pg_atomic_read_u64(&ac_latency->quiet[i]) : 0;
	}
}

/*
 * The q-quantile (0 < q < 1) of a histogram, in microseconds (the upper end
 * of its bucket); *n: the commits counted.  0 when there are none.
 */
double
ac_latency_quantile(const uint64 *counts, double q, uint64 *n)
{
	uint64		total = 0;
	uint64		seen = 0;
	int			i;

	for (i = 0; i < AC_LATENCY_BUCKETS; i++)
		total += counts[i];
	*n = total;
	if (total == 0)
		return 0;
	for (i = 0; i < AC_LATENCY_BUCKETS; i++)
	{
		seen += counts[i];
		if ((double) seen >= q * (double) total)
			return ac_latency_bucket_end(i);
	}
	return ac_latency_bucket_end(AC_LATENCY_BUCKETS - 1);
}

/*
 * archive_cluster_commit_latency(): what the pacer compares, one row per
 * histogram ("quiet": commits while no job wrote, lately; "busy": while a
 * job wrote, since start-up): commits counted, and their p50, p90, p99 in
 * milliseconds (the upper end of a bucket: within a factor of 1.5).
 */
Datum
archive_cluster_commit_latency(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	uint64		busy[AC_LATENCY_BUCKETS];
	uint64		quiet[AC_LATENCY_BUCKETS];
	int			h;

	InitMaterializedSRF(fcinfo, 0);
	if (ac_latency == NULL)
		return (Datum) 0;
	ac_commit_latency_read(busy, quiet);
	for (h = 0; h < 2; h++)
	{
		const uint64 *counts = h == 0 ? quiet : busy;
		Datum		values[5];
		bool		nulls[5] = {false};
		uint64		n;
		double		q[3] = {0.5, 0.9, 0.99};
		int			i;

		values[0] = CStringGetTextDatum(h == 0 ? "quiet" : "busy");
		for (i = 0; i < 3; i++)
		{
			values[2 + i] = Float8GetDatum(ac_latency_quantile(counts, q[i], &n) / 1000.0);
			nulls[2 + i] = (n == 0);
		}
		values[1] = Int64GetDatum((int64) n);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
