/*-------------------------------------------------------------------------
 *
 * replica_wait.h
 *		Waiting for the standbys and subscribers that lag too far behind
 *		(replica_wait.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_REPLICA_WAIT_H
#define ARCHIVE_CLUSTER_REPLICA_WAIT_H

#include "datatype/timestamp.h"

/* the status of a run or compaction that a lagging standby or subscriber stopped */
#define AC_STATUS_LAGGED "stopped: replica lag"

extern int64 ac_replica_lag(int *pid);
extern bool ac_replicas_lag_over(int64 *lag, int *pid);
extern bool ac_wait_for_replicas(TimestampTz until, int64 *waited_us, int64 *lag, int *pid);
extern bool ac_call_wait_for_replicas(const char *relname, bool compaction, int64 *waited_us);
extern void ac_report_replica_lag(int elevel, const char *relname, bool compaction, int64 lag,
								  int pid, int64 waited_us);
extern int64 ac_replica_waited_in_xact(void);
extern void ac_replica_wait_cap(TimestampTz cap);

#endif							/* ARCHIVE_CLUSTER_REPLICA_WAIT_H */
