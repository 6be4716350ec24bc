/*-------------------------------------------------------------------------
 *
 * tier_probe.h
 *		Table mode: a SELECT by one unique key is planned as on the plain
 *		table and probes the archive only on a miss (tier_probe.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_TIER_PROBE_H
#define ARCHIVE_CLUSTER_TIER_PROBE_H

extern void ac_tier_probe_install(void);

#endif							/* ARCHIVE_CLUSTER_TIER_PROBE_H */
