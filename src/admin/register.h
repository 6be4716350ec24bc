/*-------------------------------------------------------------------------
 *
 * register.h
 *		Checks of a registered table's settings, shared by
 *		archive_cluster_register(), its partitioned tables'
 *		(register_partitioned.c) and archive_cluster_alter().
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_REGISTER_H
#define ARCHIVE_CLUSTER_REGISTER_H

#include "utils/array.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

extern int	ac_parse_cluster_by(ArrayType *arr, char **cluster_by);
extern AttrNumber ac_check_column(Relation rel, const char *colname, const char *role);
extern void ac_check_age_column(Relation rel, const char *age_column);
extern void ac_check_cluster_columns(Relation rel, char **cluster_by, int ncluster);
extern void ac_check_batch_rows(int64 batch_rows, const char *hint);
extern void ac_check_hot_window(Interval *hot_window);

extern void ac_register_partitioned(Oid relid, ArrayType *cluster_by_arr, char **cluster_by,
								   int ncluster, const char *age_column, Interval *hot_window,
								   int timeout_ms);
extern bool ac_unregister_partitioned(Oid relid, int timeout_ms);

#endif							/* ARCHIVE_CLUSTER_REGISTER_H */
