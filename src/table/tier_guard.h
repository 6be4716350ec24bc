/*-------------------------------------------------------------------------
 *
 * tier_guard.h
 *		Table mode: the guard index access method that tells when a row
 *		enters a tier (tier_guard.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_TIER_GUARD_H
#define ARCHIVE_CLUSTER_TIER_GUARD_H

#include "nodes/execnodes.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

/* the access method's name, as the extension's script creates it */
#define AC_GUARD_AM "archive_cluster_guard"

extern void ac_guard_install(void);
extern bool ac_guard_present(Relation rel);
extern List *ac_guard_indexes(Relation rel);
extern void ac_guard_leave_out(ResultRelInfo *rri);

#endif							/* ARCHIVE_CLUSTER_TIER_GUARD_H */
