/*-------------------------------------------------------------------------
 *
 * register.h
 *		Checks of a registered table's settings, shared by
 *		archive_cluster_register() and archive_cluster_alter().
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_REGISTER_H
#define ARCHIVE_CLUSTER_REGISTER_H

#include "utils/array.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

extern int	ac_parse_cluster_by(ArrayType *arr, char **cluster_by);
extern void ac_check_cluster_columns(Relation rel, char **cluster_by, int ncluster);
extern void ac_check_batch_rows(int64 batch_rows, const char *hint);
extern void ac_check_hot_window(Interval *hot_window);

#endif							/* ARCHIVE_CLUSTER_REGISTER_H */
