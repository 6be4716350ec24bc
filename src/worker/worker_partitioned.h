/*-------------------------------------------------------------------------
 *
 * worker_partitioned.h
 *		The worker's passes over the leaves of registered partitioned tables
 *		(worker_partitioned.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_WORKER_PARTITIONED_H
#define ARCHIVE_CLUSTER_WORKER_PARTITIONED_H

#include "postgres.h"

extern bool ac_worker_partitioned(void);

#endif							/* ARCHIVE_CLUSTER_WORKER_PARTITIONED_H */
