/*-------------------------------------------------------------------------
 *
 * mover.h
 *		Moving the eligible rows of a registered table (mover.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_MOVER_H
#define ARCHIVE_CLUSTER_MOVER_H

#include "archive_cluster.h"
#include "pace/pace.h"

/* What one run of the mover did, and the eligible rows it left behind. */
typedef struct AcMoveResult
{
	int64		moved;
	int64		bytes;			/* of the rows written into the archive */
	int			batches;
	bool		more_left;		/* stopped at max_batches with rows unseen */
	bool		lagged;			/* stopped: a replica lagged too long */
	int64		paced_us;		/* slept for the WAL rate */
	AcPaceReport pace;			/* what the pacer did */
	bool		careful;		/* rows were checked one by one first */
	/* rows the archive refused (a constraint), left in <t>_current */
	int64		refused;
	int			refused_sqlstate;	/* of the first */
	char	   *refused_detail; /* the first's key and constraint, a sentence */
	/* rows changed or locked by other transactions meanwhile */
	int64		busy;
	char	   *busy_key;		/* of the first */
} AcMoveResult;

extern void ac_move(AcTableConfig *cfg, int64 threshold, bool force, int max_batches,
					bool careful, bool wait_replicas, AcMoveResult *res);

#endif							/* ARCHIVE_CLUSTER_MOVER_H */
