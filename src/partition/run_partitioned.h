/*-------------------------------------------------------------------------
 *
 * run_partitioned.h
 *		Passes over the due closed leaves of a registered partitioned table
 *		(run_partitioned.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_RUN_PARTITIONED_H
#define ARCHIVE_CLUSTER_RUN_PARTITIONED_H

#include "archive_cluster.h"
#include "archive/table_job.h"
#include "partition/leaf_pass.h"
#include "registry/partitioned.h"

/*
 * The most leaves one manual call passes: each is a subtransaction with a
 * transaction ID, and a backend caches at most 64 of them for others'
 * snapshots (PGPROC_MAX_CACHED_SUBXIDS).
 */
#define AC_LEAVES_PER_CALL 32

/* A settled leaf measured and found not due, for the caller to record (ac_leaf_due) */
typedef struct AcLeafCheck
{
	bool		found;
	TimestampTz vacuumed_at;	/* the VACUUM it was measured after (0: none known) */
} AcLeafCheck;

extern void ac_log_pass(AcPartitionedConfig *cfg, Oid leaf, const char *why, AcLeafPass *pass,
						TimestampTz started, const char *started_by, Oid run_as);
extern const char *ac_leaf_due(AcPartitionedConfig *cfg, Oid leaf, bool force, bool *subscribed,
							   BlockNumber *tail, AcLeafCheck *check);
extern void ac_run_partitioned(AcPartitionedConfig *cfg, bool force, int max_leaves,
							   const char *started_by, AcRunResult *res);
extern void ac_run_partitioned_call(Oid relation, const AcRunArgs *args, AcRunResult *res);

#endif							/* ARCHIVE_CLUSTER_RUN_PARTITIONED_H */
