/*-------------------------------------------------------------------------
 *
 * archive_writer.h
 *		Writing rows into <t>_archive with their index entries
 *		(archive_writer.c), for runs and compactions.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_ARCHIVE_WRITER_H
#define ARCHIVE_CLUSTER_ARCHIVE_WRITER_H

#include "access/heapam.h"
#include "access/htup_details.h"
#include "executor/executor.h"
#include "utils/tuplesort.h"

#include "pace.h"

/* rows handed to table_multi_insert() at a time; more than a page holds */
#define AC_MULTI_INSERT Max(1000, MaxHeapTuplesPerPage + 1)

typedef struct AcWriter
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	BulkInsertState bistate;
	CommandId	cid;
	TupleTableSlot *slots[AC_MULTI_INSERT];
	int			nslots;
	bool		sorted_indexes; /* index entries sorted per index */
	Tuplesortstate **isorts;	/* one per index, while rows are written */
	ExprState **predicates;		/* of partial indexes */
	AcPace	   *pace;
	MemoryContext flushcxt;		/* table_multi_insert()'s allocations, per call */
	/* what was written */
	int64		rows;
	int64		bytes;			/* of the rows as given */
	BlockNumber *blocks;		/* the pages rows went to, each once */
	int			nblocks;
	int			maxblocks;
} AcWriter;

extern void ac_writer_begin(AcWriter *w, Relation rel, bool speculative, AcPace *pace);
extern TupleTableSlot *ac_writer_slot(AcWriter *w);
extern void ac_writer_add(AcWriter *w);
extern void ac_writer_clear(AcWriter *w);
extern void ac_writer_flush(AcWriter *w);
extern BlockNumber ac_writer_flush_page(AcWriter *w, Size free_after);
extern void ac_writer_finish(AcWriter *w);
extern void ac_writer_end(AcWriter *w);
extern Size ac_page_space(Relation rel);
extern Size ac_row_space(Size len);

#endif							/* ARCHIVE_CLUSTER_ARCHIVE_WRITER_H */
