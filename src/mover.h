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

extern int64 ac_move(AcTableConfig *cfg, int64 threshold, bool force, int max_batches,
					 int *nbatches, bool *more_left, int64 *paced_us);

#endif							/* ARCHIVE_CLUSTER_MOVER_H */
