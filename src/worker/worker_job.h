/*-------------------------------------------------------------------------
 *
 * worker_job.h
 *		The frame of a worker's job on a table (worker_job.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_WORKER_JOB_H
#define ARCHIVE_CLUSTER_WORKER_JOB_H

#include "datatype/timestamp.h"
#include "utils/elog.h"
#include "utils/palloc.h"

/* A job of the worker on a table, bounded by archive_cluster.job_timeout. */
typedef enum AcJobKind
{
	AC_JOB_RUN,					/* a batch of a run */
	AC_JOB_COMPACTION,
	AC_JOB_REBUILD,				/* REINDEX INDEX CONCURRENTLY of an archive's index */
	AC_JOB_DROP_LEFTOVER		/* DROP INDEX CONCURRENTLY of what a failed rebuild left */
} AcJobKind;

/* outlives the transactions of a worker's pass */
extern MemoryContext ac_cycle_cxt;
/* PortalContext of the worker's utility statements */
extern MemoryContext ac_vacuum_cxt;
/* when the worker leaves its database to others (worker_time_slice) */
extern TimestampTz ac_slice_end;

extern bool ac_slice_over(void);
extern void ac_job_begin(AcJobKind kind);
extern void ac_job_end(void);
extern TimestampTz ac_job_deadline_at(void);
extern void ac_job_explain_timeout(ErrorData *edata, const char *relname);
extern void ac_begin(const char *activity);
extern void ac_commit(void);
extern void ac_log_error_and_abort(void);
extern void ac_worker_set_limits(void);
extern ErrorData *ac_job_abort(const char *what);
extern void ac_worker_log_caught(const char *what, const char *hint);
extern void ac_worker_record_error(Oid relation, const char *kind, TimestampTz started,
								   const char *message);

#endif							/* ARCHIVE_CLUSTER_WORKER_JOB_H */
