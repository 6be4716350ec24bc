/*-------------------------------------------------------------------------
 *
 * archive_checks.h
 *		Would <t>_archive refuse this row? (archive_checks.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_ARCHIVE_CHECKS_H
#define ARCHIVE_CLUSTER_ARCHIVE_CHECKS_H

#include "executor/execdesc.h"
#include "nodes/execnodes.h"

typedef struct AcArchiveChecks AcArchiveChecks;

extern AcArchiveChecks *ac_archive_checks_begin(ResultRelInfo *rri, EState *estate);
extern char *ac_archive_refuses(AcArchiveChecks *c, TupleTableSlot *slot, int *sqlstate);
extern char *ac_row_key(Relation rel, TupleTableSlot *slot);

#endif							/* ARCHIVE_CLUSTER_ARCHIVE_CHECKS_H */
