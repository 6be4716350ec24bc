/*-------------------------------------------------------------------------
 *
 * subxact.h
 *		Call a function in a subtransaction and catch its error (subxact.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_SUBXACT_H
#define ARCHIVE_CLUSTER_SUBXACT_H

#include "postgres.h"

#include "utils/elog.h"

typedef void (*AcSubxactFn) (void *arg);

extern ErrorData *ac_subxact_call(AcSubxactFn fn, void *arg, MemoryContext workcxt);

#endif							/* ARCHIVE_CLUSTER_SUBXACT_H */
