/*-------------------------------------------------------------------------
 *
 * compact.h
 *		Compaction of a registered table's archive (compact.c), and what it
 *		measures before it starts (compact_due.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_COMPACT_H
#define ARCHIVE_CLUSTER_COMPACT_H

#include "archive_cluster.h"
#include "utils/relcache.h"
#include "utils/tuplesort.h"

extern void ac_check_immediate_unique(Relation rel, const char *hint);
extern TupleDesc ac_sort_desc(Relation rel, int ncluster, const AttrNumber *cols);
extern void ac_sort_put(Tuplesortstate *sort, TupleTableSlot *keyslot, TupleTableSlot *rowslot,
						const AttrNumber *cols, int ncluster, ItemPointer tid);
extern double ac_archive_row_bytes(Oid relation, Relation arc);
extern double ac_compactable_share(AcTableConfig *cfg);
extern void ac_archive_sort_columns(AcTableConfig *cfg, Relation arc, AttrNumber *cols,
									Oid *ops, Oid *colls, bool *nullsfirst);
extern void ac_compact_table(AcTableConfig *cfg, bool force, bool wait_replicas, const char *started_by,
							 AcRunResult *res);

#endif							/* ARCHIVE_CLUSTER_COMPACT_H */
