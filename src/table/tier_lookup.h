/*-------------------------------------------------------------------------
 *
 * tier_lookup.h
 *		Table mode: a look-up by one key of a unique index stops at the tier
 *		that holds the row (tier_lookup.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_TIER_LOOKUP_H
#define ARCHIVE_CLUSTER_TIER_LOOKUP_H

extern bool ac_lookup_allowed;

extern void ac_tier_lookup_install(void);

#endif							/* ARCHIVE_CLUSTER_TIER_LOOKUP_H */
