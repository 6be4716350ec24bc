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

extern void ac_guard_install(void);

#endif							/* ARCHIVE_CLUSTER_TIER_GUARD_H */
