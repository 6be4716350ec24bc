/*-------------------------------------------------------------------------
 *
 * leaf_space.h
 *		Where a leaf partition's rows lie in its file, and which of them a
 *		tail pass moves so that VACUUM can truncate it (leaf_space.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_LEAF_SPACE_H
#define ARCHIVE_CLUSTER_LEAF_SPACE_H

#include "postgres.h"

#include "storage/block.h"
#include "utils/relcache.h"

extern BlockNumber ac_tail_start(Relation rel);
extern BlockNumber ac_leaf_tail_start(Oid leaf);

#endif							/* ARCHIVE_CLUSTER_LEAF_SPACE_H */
