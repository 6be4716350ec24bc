/*-------------------------------------------------------------------------
 *
 * partitioned.h
 *		Reading and writing what archive_cluster knows of registered
 *		partitioned tables and their leaves (partitioned.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_PARTITIONED_H
#define ARCHIVE_CLUSTER_PARTITIONED_H

#include "archive_cluster.h"
#include "storage/block.h"
#include "utils/array.h"

/* A partitioned table registered with mode => 'partitioned'. */
typedef struct AcPartitionedConfig
{
	Oid			relation;
	int			ncluster;
	char	   *cluster_by[AC_MAX_CLUSTER_COLS];
	char	   *age_column;
	Interval	hot_window;
} AcPartitionedConfig;

/* What the passes did to one leaf (archive_cluster_leaves). */
typedef struct AcLeafState
{
	bool		found;
	int			passes;
	int64		rows_rewritten;
	TimestampTz last_pass_at;	/* 0: none */
	TimestampTz settled_at;		/* 0: never went through to the end */
	int64		settled_blocks;
	TimestampTz checked_at;		/* the VACUUM after which it was last found
								 * not due; 0: none */
	bytea	   *resume_at;		/* NULL: from the start */
} AcLeafState;

extern bool ac_partitioned_available(void);
extern bool ac_load_partitioned(Oid relation, AcPartitionedConfig *cfg);
extern List *ac_partitioned_relations(void);
extern void ac_record_partitioned(Oid relation, ArrayType *cluster_by, const char *age_column,
								  Interval *hot_window, Oid caller_id);
extern void ac_forget_partitioned(Oid relation);
extern void ac_leaf_state(Oid leaf, AcLeafState *state);
extern void ac_leaf_checked(Oid leaf, TimestampTz vacuumed_at);
extern void ac_leaf_record(Oid relation, Oid leaf, int64 rows, bool settled,
						   BlockNumber blocks, bytea *resume_at);

#endif							/* ARCHIVE_CLUSTER_PARTITIONED_H */
