/*-------------------------------------------------------------------------
 *
 * index_rebuild.h
 *		The worker's rebuild of an archive's sparse indexes (index_rebuild.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_INDEX_REBUILD_H
#define ARCHIVE_CLUSTER_INDEX_REBUILD_H

extern void ac_worker_rebuild_indexes(Oid relation, Oid archive, const char *relname);

#endif							/* ARCHIVE_CLUSTER_INDEX_REBUILD_H */
