/*-------------------------------------------------------------------------
 *
 * settings.h
 *		Checks of a registered table's settings (settings.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_SETTINGS_H
#define ARCHIVE_CLUSTER_SETTINGS_H

#include "utils/array.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

extern int	ac_parse_cluster_by(ArrayType *arr, char **cluster_by);
extern AttrNumber ac_check_column(Relation rel, const char *colname, const char *role);
extern void ac_check_age_column(Relation rel, const char *age_column);
extern void ac_check_cluster_columns(Relation rel, char **cluster_by, int ncluster);
extern void ac_check_batch_rows(int64 batch_rows, const char *hint);
extern void ac_check_hot_window(Interval *hot_window);

#endif							/* ARCHIVE_CLUSTER_SETTINGS_H */
