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

typedef struct AcLeafPass
{
	int64		rows;			/* rewritten */
	int64		busy;			/* left where they were: changed or locked */
	int64		pages;			/* written */
	bool		gave_way;		/* stopped for a session waiting on the leaf */
	bool		resumed;		/* went on from where the last pass gave way */
	bool		to_front;		/* wrote onto pages VACUUM freed at the front */
	int64		bytes;			/* of the rows written */
	int64		paced_us;
	char	   *detail;			/* how it was paced */
} AcLeafPass;

/* share of a leaf's front half that VACUUM freed, from which a pass moves rows there */
#define AC_TO_FRONT_SHARE 0.9

extern bool ac_leaves_have_waiters(List *leaves);
extern double ac_leaf_front_empty(Oid leaf);
extern void ac_pass_leaf(AcPartitionedConfig *cfg, Oid leaf, List *held, TimestampTz deadline,
						 AcLeafPass *pass);

#endif							/* ARCHIVE_CLUSTER_LEAF_PASS_H */
