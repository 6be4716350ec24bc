/*-------------------------------------------------------------------------
 *
 * on_conflict.h
 *		Table mode: INSERT ... ON CONFLICT meeting archived rows
 *		(on_conflict.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_ON_CONFLICT_H
#define ARCHIVE_CLUSTER_ON_CONFLICT_H

extern void ac_on_conflict_install(void);

#endif							/* ARCHIVE_CLUSTER_ON_CONFLICT_H */
