/*-------------------------------------------------------------------------
 *
 * writeback.h
 *		Having the kernel write back a job's relations as it goes (writeback.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_WRITEBACK_H
#define ARCHIVE_CLUSTER_WRITEBACK_H

#include "datatype/timestamp.h"
#include "nodes/pg_list.h"
#include "utils/relcache.h"

typedef struct AcWriteback
{
	List	   *rels;			/* AcWritebackRel: the relations, each with its place */
	int			current;		/* the one a request goes on with */
	TimestampTz last;			/* the last request; 0: none yet */
	bool		named;			/* the relations were logged since the last one added */
} AcWriteback;

extern void ac_writeback_add(AcWriteback *wb, Relation rel);
extern void ac_writeback_forget(AcWriteback *wb, Relation rel);
extern void ac_writeback(AcWriteback *wb);

#endif							/* ARCHIVE_CLUSTER_WRITEBACK_H */
