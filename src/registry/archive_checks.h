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

/* what the archive says to a row */
typedef enum AcRefusal
{
	AC_TAKES = 0,
	AC_REFUSED_NOT_NULL,		/* a column NOT NULL in the archive is null */
	AC_REFUSED_CHECK,			/* a CHECK constraint of the archive */
	AC_REFUSED_UNIQUE			/* the archive has a row with the same key */
} AcRefusal;

extern AcArchiveChecks *ac_archive_checks_begin(ResultRelInfo *rri, EState *estate);
extern AcRefusal ac_archive_refuses(AcArchiveChecks *c, TupleTableSlot *slot,
									const char **constraint);
extern char *ac_refusal_text(AcRefusal refusal, const char *key, const char *constraint,
							 const char *arcname);
extern int	ac_refusal_sqlstate(AcRefusal refusal);
extern char *ac_row_key(Relation rel, TupleTableSlot *slot);

#endif							/* ARCHIVE_CLUSTER_ARCHIVE_CHECKS_H */
