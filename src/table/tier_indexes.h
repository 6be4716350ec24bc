/*-------------------------------------------------------------------------
 *
 * tier_indexes.h
 *		Table mode: the indexes of <t> and their counterparts on
 *		<t>_archive (tier_indexes.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_TIER_INDEXES_H
#define ARCHIVE_CLUSTER_TIER_INDEXES_H

#include "utils/relcache.h"

extern Oid	ac_index_counterpart(Oid indexoid, Relation other);
extern void ac_check_tier_indexes(Relation parent, Relation archive, bool registering);

#endif							/* ARCHIVE_CLUSTER_TIER_INDEXES_H */
