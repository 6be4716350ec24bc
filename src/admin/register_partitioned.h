/*-------------------------------------------------------------------------
 *
 * register_partitioned.h
 *		Registering and unregistering a partitioned table
 *		(register_partitioned.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_REGISTER_PARTITIONED_H
#define ARCHIVE_CLUSTER_REGISTER_PARTITIONED_H

#include "utils/array.h"
#include "utils/timestamp.h"

extern void ac_register_partitioned(Oid relid, ArrayType *cluster_by_arr, char **cluster_by,
									int ncluster, const char *age_column, Interval *hot_window,
									int timeout_ms);
extern bool ac_unregister_partitioned(Oid relid, int timeout_ms);

#endif							/* ARCHIVE_CLUSTER_REGISTER_PARTITIONED_H */
