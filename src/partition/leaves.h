/*-------------------------------------------------------------------------
 *
 * leaves.h
 *		The leaf partitions of a registered partitioned table, and which are
 *		closed (leaves.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_LEAVES_H
#define ARCHIVE_CLUSTER_LEAVES_H

#include "archive_cluster.h"
#include "registry/partitioned.h"

/* How a leaf is known to hold no row of the hot window. */
typedef enum AcClosedBy
{
	AC_OPEN = 0,
	AC_CLOSED_BY_BOUND,			/* its own range bound on the age column */
	AC_CLOSED_BY_PARENT,		/* a parent's range bound */
	AC_CLOSED_BY_ROWS			/* its newest row, read from an index */
} AcClosedBy;

typedef struct AcLeaf
{
	Oid			leaf;
	Oid			parent;
	AcClosedBy	closed_by;
} AcLeaf;

extern List *ac_partition_leaves(AcPartitionedConfig *cfg);
extern AcClosedBy ac_leaf_closed(AcPartitionedConfig *cfg, Oid leaf, bool check_rows);
extern const char *ac_closed_by_name(AcClosedBy closed_by);

#endif							/* ARCHIVE_CLUSTER_LEAVES_H */
