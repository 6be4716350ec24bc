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

extern void ac_guard_install(void);

#endif							/* ARCHIVE_CLUSTER_TIER_GUARD_H */
