/*-------------------------------------------------------------------------
 *
 * replica_wait.h
 *		Waiting, before a batch, for the standbys and subscribers that lag
 *		too far behind (replica_wait.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_REPLICA_WAIT_H
#define ARCHIVE_CLUSTER_REPLICA_WAIT_H

extern int64 ac_replica_lag(int *pid);
extern bool ac_wait_for_replicas(const char *relname);

#endif							/* ARCHIVE_CLUSTER_REPLICA_WAIT_H */
