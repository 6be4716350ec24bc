/*-------------------------------------------------------------------------
 *
 * index_fill.h
 *		How full the leaf pages of a btree index are (index_fill.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_INDEX_FILL_H
#define ARCHIVE_CLUSTER_INDEX_FILL_H

#include "utils/relcache.h"

/* pages sampled by default */
#define AC_FILL_SAMPLE_PAGES 200

extern double ac_index_leaf_fill(Relation index, int sample_pages);

#endif							/* ARCHIVE_CLUSTER_INDEX_FILL_H */
