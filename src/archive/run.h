/*-------------------------------------------------------------------------
 *
 * run.h
 *		A run of one registered table (run.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_RUN_H
#define ARCHIVE_CLUSTER_RUN_H

#include "archive_cluster.h"

extern void ac_run_table(AcTableConfig *cfg, bool force, int max_batches, bool wait_replicas,
						 int64 waited_before_us, const char *started_by, AcRunResult *res);

#endif							/* ARCHIVE_CLUSTER_RUN_H */
