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

#include "archive_cluster.h"
#include "pace/pace.h"

/* rows buffered: a page's worth, and the next row */
#define AC_PAGE_SLOTS (MaxHeapTuplesPerPage + 1)

typedef struct AcWriter
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	BulkInsertState bistate;
	CommandId	cid;
	TupleTableSlot *slots[AC_PAGE_SLOTS];
	int			nslots;
	Size		page_space;		/* bytes a page offers to rows */
	Size		used;			/* bytes taken on the page being filled */
	BlockNumber page;			/* the page the last flush left with room */
	int			page_rows;		/* rows already on it */
	bool		page_per_flush; /* each flush onto a page of its own */
	bool		lowest_first;	/* empty pages from the file's start (below
								 * lowest_end), not the free space map's pick */
	BlockNumber lowest_next;	/* the next page to look at */
	BlockNumber lowest_end;
	bool		sorted_indexes; /* index entries sorted per index */
	bool		sorts_begun;	/* isorts made, for the rows since the last
								 * ac_writer_finish() */
	Tuplesortstate **isorts;	/* one per index, while rows are written;
								 * NULL: inserted as the rows are (in order) */
	int			norder;			/* rows come sorted by these columns: */
	AttrNumber	order_attnos[AC_MAX_CLUSTER_COLS];
	Oid			order_ops[AC_MAX_CLUSTER_COLS]; /* "<" operators */
	Oid			order_colls[AC_MAX_CLUSTER_COLS];
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
extern void ac_writer_lowest_first(AcWriter *w, BlockNumber end);
extern void ac_writer_set_order(AcWriter *w, int ncols, const AttrNumber *attnos,
								const Oid *ltops, const Oid *collations);
extern TupleTableSlot *ac_writer_slot(AcWriter *w);
extern bool ac_writer_fits(AcWriter *w, TupleTableSlot *slot);
extern void ac_writer_add(AcWriter *w);
extern void ac_writer_clear(AcWriter *w);
extern BlockNumber ac_writer_flush(AcWriter *w);
extern void ac_writer_finish(AcWriter *w);
extern void ac_writer_end(AcWriter *w);

#endif							/* ARCHIVE_CLUSTER_ARCHIVE_WRITER_H */
