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

typedef struct AcPace
{
	int			rate_mb;		/* MB/s of WAL at most; <= 0: not paced */
	bool		always;			/* also alone, not only among other writers */
	uint32		wait_event;
	int			calls;
	FullTransactionId next_xid; /* at the previous look */
	bool		had_xid;		/* our own transaction ID was assigned */
	TimestampTz others_seen;	/* when others last began writing */
	bool		pacing;
	TimestampTz pace_start;
	uint64		pace_wal;		/* pgWalUsage.wal_bytes at pace_start */
	int64		paced_us;		/* time slept for the rate */
	int64		replica_us;		/* time waited for lagging peers */
} AcPace;

extern void ac_pace_init(AcPace *p, int rate_mb, bool always, uint32 wait_event);
extern void ac_pace(AcPace *p);
extern void ac_pace_restart(AcPace *p);

#endif							/* ARCHIVE_CLUSTER_PACE_H */
