/*-------------------------------------------------------------------------
 *
 * writeback.h
 *		Having the kernel write back a job's tables as it goes (writeback.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_WRITEBACK_H
#define ARCHIVE_CLUSTER_WRITEBACK_H

#include "datatype/timestamp.h"
#include "utils/relcache.h"

/* the relations a job changes in place: a tier's heap and an archive's indexes */
#define AC_WRITEBACK_MAX_RELS	16

typedef struct AcWriteback
{
	int			nrels;
	Relation	rels[AC_WRITEBACK_MAX_RELS];
	TimestampTz last;			/* the last request */
	uint64		requests;		/* requests made */
} AcWriteback;

extern void ac_writeback_add(AcWriteback *wb, Relation rel);
extern void ac_writeback_forget(AcWriteback *wb, Relation rel);
extern void ac_writeback(AcWriteback *wb, TimestampTz now);

#endif							/* ARCHIVE_CLUSTER_WRITEBACK_H */
