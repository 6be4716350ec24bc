/*-------------------------------------------------------------------------
 *
 * table_job.h
 *		The frame of a job on one registered table, shared by runs and
 *		compactions as equals (table_job.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_TABLE_JOB_H
#define ARCHIVE_CLUSTER_TABLE_JOB_H

#include "archive_cluster.h"

typedef void (*AcTableWork) (AcTableConfig *cfg, void *arg, AcRunResult *res);

/* archive_cluster_run()'s arguments */
typedef struct AcRunArgs
{
	bool		force;
	int			max_batches;
} AcRunArgs;

/*
 * archive_cluster_run() on a registered partitioned table (set by
 * partition/, which is above this folder): arg is an AcRunArgs.
 */
typedef void (*AcPartitionedRun) (Oid relation, const AcRunArgs *args, AcRunResult *res);
extern AcPartitionedRun ac_partitioned_run_hook;
extern void ac_each_table(FunctionCallInfo fcinfo, const char *kind, AcTableWork work,
						  void *arg);
extern void ac_flush_as_written(void);
extern void ac_run_log_of(AcRunLog *log, Oid relation, const char *kind,
						  const AcRunResult *res, const char *started_by, Oid run_as);
extern const char *ac_caller(void);
extern char *ac_table_begin(AcTableConfig *cfg, AcRunResult *res);

#endif							/* ARCHIVE_CLUSTER_TABLE_JOB_H */
