/*-------------------------------------------------------------------------
 *
 * threshold.h
 *		When a registered table is due (threshold.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_THRESHOLD_H
#define ARCHIVE_CLUSTER_THRESHOLD_H

#include "archive_cluster.h"

/* The batch size a run uses, with the inputs it came from. */
typedef struct AcThreshold
{
	int64		rows;
	const char *source;			/* "batch_rows", "statistics" or "default" */
	double		distinct_keys;	/* < 0 when unknown */
	double		rows_per_page;	/* < 0 when unknown */
} AcThreshold;

extern void ac_compute_threshold(AcTableConfig *cfg, AcThreshold *th);
extern bool ac_table_due(AcTableConfig *cfg, int64 threshold);
extern TimestampTz ac_cutoff(AcTableConfig *cfg);
extern int64 ac_cutoff_for_type(AcTableConfig *cfg, Oid agetype);

#endif							/* ARCHIVE_CLUSTER_THRESHOLD_H */
