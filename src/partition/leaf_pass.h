/*-------------------------------------------------------------------------
 *
 * leaf_pass.h
 *		A pass over one closed leaf partition (leaf_pass.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_LEAF_PASS_H
#define ARCHIVE_CLUSTER_LEAF_PASS_H

#include "archive_cluster.h"
#include "registry/partitioned.h"
#include "storage/block.h"

typedef struct AcLeafPass
{
	int64		rows;			/* rewritten */
	int64		busy;			/* left where they were: changed or locked */
	int64		pages;			/* written */
	bool		gave_way;		/* stopped for a session waiting on the leaf */
	bool		resumed;		/* went on from where the last pass gave way */
	bool		tail;			/* a tail pass (leaf_space.c) */
	bool		to_front;		/* wrote onto pages VACUUM freed, not at the end */
	int64		bytes;			/* of the rows written */
	int64		paced_us;
	char	   *detail;			/* how it was paced */
} AcLeafPass;

extern bool ac_leaves_have_waiters(List *leaves);
extern void ac_pass_leaf(AcPartitionedConfig *cfg, Oid leaf, List *held, BlockNumber tail,
						 TimestampTz deadline, AcLeafPass *pass);

#endif							/* ARCHIVE_CLUSTER_LEAF_PASS_H */
