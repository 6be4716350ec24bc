/*-------------------------------------------------------------------------
 *
 * constraints.h
 *		Constraints that archive_cluster cannot keep across the tiers of a
 *		registered table (constraints.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_CONSTRAINTS_H
#define ARCHIVE_CLUSTER_CONSTRAINTS_H

#include "utils/relcache.h"

extern void ac_check_unique_indexes(Relation rel, const char *tablename,
									bool registering);
extern void ac_check_referencing_keys(Relation rel, const char *tablename,
									  bool registering);
extern void ac_copy_foreign_keys(Oid relid, const char *qarc);

#endif							/* ARCHIVE_CLUSTER_CONSTRAINTS_H */
