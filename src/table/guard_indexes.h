/*-------------------------------------------------------------------------
 *
 * guard_indexes.h
 *		Table mode: the guard indexes of a tier (guard_indexes.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_GUARD_INDEXES_H
#define ARCHIVE_CLUSTER_GUARD_INDEXES_H

#include "nodes/execnodes.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

/* the access method's name, as the extension's script creates it */
#define AC_GUARD_AM "archive_cluster_guard"

extern Oid	ac_guard_am(void);
extern bool ac_is_guard(Oid indexid, Oid am);
extern bool ac_guard_present(Relation rel);
extern List *ac_guard_indexes(Relation rel);
extern void ac_guard_leave_out(ResultRelInfo *rri);

#endif							/* ARCHIVE_CLUSTER_GUARD_INDEXES_H */
