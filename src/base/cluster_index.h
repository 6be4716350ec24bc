/*-------------------------------------------------------------------------
 *
 * cluster_index.h
 *		Finding a table's index in its cluster key's order (cluster_index.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_CLUSTER_INDEX_H
#define ARCHIVE_CLUSTER_CLUSTER_INDEX_H

#include "postgres.h"

#include "utils/relcache.h"

extern Oid	ac_cluster_index(Relation rel, char **cluster_by, int ncluster);

#endif							/* ARCHIVE_CLUSTER_CLUSTER_INDEX_H */
