/*-------------------------------------------------------------------------
 *
 * writeback.c
 *		Having the kernel write back the pages of a job's relations as it goes.
 *
 *		A run deletes rows all over the current tier's oldest pages, a
 *		compaction all over the archive's loose pages, and both add entries
 *		to the archive's indexes: pages changed in shared buffers, not
 *		through the job's ring of buffers, so backend_flush_after
 *		(archive_cluster.run_flush_after) does not reach them.  Whoever needs
 *		their buffers writes them out, often a session without
 *		backend_flush_after, and the kernel keeps them as dirty page cache
 *		until vm.dirty_expire_centisecs (30 s by default), then writes them
 *		in one burst that the WAL flushes of others' commits wait behind
 *		(docs/design/pace-by-effect.md, section 9).  So a job paced by its
 *		effect asks the kernel, every AC_WRITEBACK_US, to start writing back
 *		whatever of its relations' files is dirty (sync_file_range's
 *		SYNC_FILE_RANGE_WRITE, through smgrwriteback, as the checkpointer
 *		does with checkpoint_flush_after): the disk gets them a little at a
 *		time, at the job's pace, whoever wrote them.  It goes through a file
 *		AC_WRITEBACK_CHUNK blocks at a time and stops after
 *		AC_WRITEBACK_BUDGET_US, to go on from there at the next request: the
 *		kernel may block a request while much is dirty, and the job answers
 *		a cancel between chunks.  Pages still dirty in shared buffers are
 *		not written by it, nor are TOAST tables.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/fd.h"
#include "storage/smgr.h"
#include "utils/builtins.h"
#include "utils/rel.h"
#include "utils/timestamp.h"

#include "base/guc.h"
#include "pace/writeback.h"

/* how often a job asks the kernel to write back its relations' files */
#define AC_WRITEBACK_US			250000
/* blocks of a file in one request to the kernel (32 MB) */
#define AC_WRITEBACK_CHUNK		4096
/* time a job spends on its requests at most, each AC_WRITEBACK_US */
#define AC_WRITEBACK_BUDGET_US	20000

typedef struct AcWritebackRel
{
	Relation	rel;			/* open while registered */
	BlockNumber next;			/* where the next request goes on */
} AcWritebackRel;

/* rel (kept open by the caller while registered) is written back too. */
void
ac_writeback_add(AcWriteback *wb, Relation rel)
{
	AcWritebackRel *r;
	ListCell   *lc;

	foreach(lc, wb->rels)
	{
		if (((AcWritebackRel *) lfirst(lc))->rel == rel)
			return;
	}
	r = palloc0(sizeof(AcWritebackRel));
	r->rel = rel;
	wb->rels = lappend(wb->rels, r);
	wb->named = false;
}

/* rel is about to be closed: not written back any more. */
void
ac_writeback_forget(AcWriteback *wb, Relation rel)
{
	ListCell   *lc;

	foreach(lc, wb->rels)
	{
		AcWritebackRel *r = lfirst(lc);

		if (r->rel == rel)
		{
			wb->rels = foreach_delete_current(wb->rels, lc);
			pfree(r);
		}
	}
	wb->current = 0;
}

/* The relations' names, for the log. */
static char *
ac_writeback_names(AcWriteback *wb)
{
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	foreach(lc, wb->rels)
	{
		Relation	rel = ((AcWritebackRel *) lfirst(lc))->rel;

		appendStringInfo(&buf, "%s%s", buf.len > 0 ? ", " : "",
						 quote_identifier(RelationGetRelationName(rel)));
	}
	return buf.data;
}

/*
 * Ask the kernel to start writing back the dirty pages of the job's
 * relations, every AC_WRITEBACK_US from the first call on; not with
 * run_flush_after = 0 (the kernel decides, as for other sessions), nor
 * where the server does not ask it either (fsync off, direct I/O).
 */
void
ac_writeback(AcWriteback *wb)
{
	TimestampTz start;
	int			n = list_length(wb->rels);
	int			done;

	if (archive_cluster_run_flush_after <= 0 || n == 0 || !enableFsync)
		return;
#if PG_VERSION_NUM >= 160000
	if (io_direct_flags & IO_DIRECT_DATA)
		return;
#endif
	start = GetCurrentTimestamp();
	if (wb->last == 0)
		wb->last = start;
	if (start - wb->last < AC_WRITEBACK_US)
		return;
	wb->last = start;
	if (!wb->named)
	{
		elog(DEBUG1, "archive_cluster: the kernel writes back %s as the job goes",
			 ac_writeback_names(wb));
		wb->named = true;
	}
	for (done = 0; done < n; done++)
	{
		AcWritebackRel *r = list_nth(wb->rels, wb->current % n);
		BlockNumber nblocks = smgrnblocks(RelationGetSmgr(r->rel), MAIN_FORKNUM);

		while (r->next < nblocks)
		{
			BlockNumber len = Min(nblocks - r->next, AC_WRITEBACK_CHUNK);

			/* again after CHECK_FOR_INTERRUPTS: a barrier may have closed it */
			smgrwriteback(RelationGetSmgr(r->rel), MAIN_FORKNUM, r->next, len);
			r->next += len;
			if (GetCurrentTimestamp() - start >= AC_WRITEBACK_BUDGET_US)
				return;
			CHECK_FOR_INTERRUPTS();
		}
		r->next = 0;
		wb->current = (wb->current + 1) % n;
	}
}
