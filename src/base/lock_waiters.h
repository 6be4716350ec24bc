/*-------------------------------------------------------------------------
 *
 * lock_waiters.h
 *		Is another session waiting for a lock on a relation, or for this
 *		transaction (lock_waiters.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_LOCK_WAITERS_H
#define ARCHIVE_CLUSTER_LOCK_WAITERS_H

#include "postgres.h"

extern bool ac_relation_has_waiters(Oid relid);
extern void ac_xact_watch_current(void);
extern bool ac_xact_has_waiters(void);

#endif							/* ARCHIVE_CLUSTER_LOCK_WAITERS_H */
