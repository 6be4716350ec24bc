/*-------------------------------------------------------------------------
 *
 * pace.h
 *		Pacing a long write by its WAL rate (pace.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_PACE_H
#define ARCHIVE_CLUSTER_PACE_H

#include "access/transam.h"
#include "datatype/timestamp.h"

#include "pace/commit_latency.h"
#include "pace/writeback.h"

typedef struct AcPace
{
	int			rate_mb;		/* MB/s of WAL at most; <= 0: not paced */
	bool		always;			/* pacing = 'rate': also alone (compactions, as 1.0) */
	bool		no_replica_wait;	/* the caller stops for lagging peers itself,
									 * rather than wait holding its locks */
	uint32		wait_event;
	uint64		calls;
	uint64		looks;			/* times it looked (ac_pace) */
	uint64		look_calls;		/* calls at the last look */
	uint64		look_wal;		/* pgWalUsage.wal_bytes at the last look */
	FullTransactionId next_xid; /* at the previous look */
	FullTransactionId own_xid;	/* our (sub)transaction's ID at the previous look */
	TimestampTz others_seen;	/* pacing = rate: when others last began writing */
	TimestampTz started;		/* by effect: only others' writing since counts */
	bool		pacing;
	TimestampTz pace_start;
	uint64		pace_wal;		/* pgWalUsage.wal_bytes at pace_start */
	int64		paced_us;		/* time slept for the rate */
	int64		replica_us;		/* time waited for lagging peers */
	/* archive_cluster.pacing = 'effect' (commit_latency.c) */
	bool		effect;
	double		rate;			/* MB/s now */
	int64		window_start;	/* monotonic us; 0: no window yet */
	uint64		window_busy[AC_LATENCY_BUCKETS];	/* at its start */
	double		window_p99;		/* us, of the last window's busy commits */
	double		base_p99;		/* us, of the quiet commits */
	uint64		window_commits;
	int			slowdowns;		/* times the rate was halved */
	double		min_rate;		/* the lowest rate it went to */
	AcWriteback wb;				/* the relations it changes in place */
} AcPace;

/* what a job's pacer did, for the run log (ac_pace_detail) */
typedef struct AcPaceReport
{
	bool		effect;			/* paced by others' commit latency */
	bool		paced;			/* it slept for the rate */
	double		rate;			/* MB/s at the end */
	double		min_rate;		/* the lowest it went to */
	int			slowdowns;		/* times it halved */
	double		window_p99;		/* us, the last window's busy commits */
	double		base_p99;		/* us, quiet commits */
	uint64		window_commits;	/* in the last window */
} AcPaceReport;

extern void ac_pace_init(AcPace *p, int rate_mb, bool always, uint32 wait_event);
extern void ac_pace_report(const AcPace *p, AcPaceReport *r);
extern char *ac_pace_detail(const AcPaceReport *r, int64 replica_us, bool lagged);
extern void ac_pace(AcPace *p);
extern void ac_pace_restart(AcPace *p);

#endif							/* ARCHIVE_CLUSTER_PACE_H */
