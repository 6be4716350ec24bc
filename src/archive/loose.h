/*-------------------------------------------------------------------------
 *
 * loose.h
 *		The loose pages of an archive, which a compaction rewrites (loose.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_LOOSE_H
#define ARCHIVE_CLUSTER_LOOSE_H

#include "storage/block.h"

/* pages start <= page < end */
typedef struct AcBlockRange
{
	BlockNumber start;
	BlockNumber end;
} AcBlockRange;

typedef struct AcLooseSet
{
	int			nranges;
	AcBlockRange *ranges;		/* sorted, apart */
	int64		pages;
	int			batches;		/* batches written since the last compaction */
} AcLooseSet;

extern void ac_loose_add(Oid relation, BlockNumber *blocks, int nblocks);
extern void ac_loose_replace(Oid relation, BlockNumber *blocks, int nblocks);
extern void ac_loose_load(Oid relation, AcLooseSet *set);
extern bool ac_loose_contains(const AcLooseSet *set, BlockNumber blk);

#endif							/* ARCHIVE_CLUSTER_LOOSE_H */
