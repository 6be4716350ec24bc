/*-------------------------------------------------------------------------
 *
 * row_locks.h
 *		Refusing row locks through a registered view (row_locks.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_ROW_LOCKS_H
#define ARCHIVE_CLUSTER_ROW_LOCKS_H

extern void ac_row_locks_install(void);

#endif							/* ARCHIVE_CLUSTER_ROW_LOCKS_H */
