/*-------------------------------------------------------------------------
 *
 * writeback.c
 *		Having the kernel write back the pages of a job's tables as it goes.
 *
 *		A run deletes rows all over the current tier's oldest pages, a
 *		compaction all over the archive's loose pages, and both add entries
 *		to the archive's indexes: pages changed in shared buffers, not
 *		through the job's ring, so backend_flush_after
 *		(archive_cluster.run_flush_after) does not reach them.  Whoever needs
 *		their buffers writes them out, often a concurrent session without
 *		backend_flush_after, and the kernel keeps them as dirty page cache
 *		until vm.dirty_expire_centisecs (30 s by default), then writes them
 *		in one burst that every WAL flush of others' commits waits behind
 *		(docs/bench/history.md, 2026-11-28).  So while a job writes, it asks
 *		the kernel every AC_WRITEBACK_US to start writing back whatever of
 *		its relations' files is dirty (sync_file_range's SYNC_FILE_RANGE_WRITE,
 *		through smgrwriteback, as the checkpointer does with
 *		checkpoint_flush_after): the disk gets them a little at a time, at
 *		the job's pace.  Pages still dirty in shared buffers are not written
 *		by it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "storage/smgr.h"
#include "utils/rel.h"

#include "base/guc.h"
#include "pace/writeback.h"

/* how often a job asks the kernel to write back its relations' files */
#define AC_WRITEBACK_US		250000

/* rel (kept open by the caller until the job ends) is written back too. */
void
ac_writeback_add(AcWriteback *wb, Relation rel)
{
	int			i;

	for (i = 0; i < wb->nrels; i++)
		if (wb->rels[i] == rel)
			return;
	if (wb->nrels < AC_WRITEBACK_MAX_RELS)
		wb->rels[wb->nrels++] = rel;
}

/* rel is about to be closed: not written back any more. */
void
ac_writeback_forget(AcWriteback *wb, Relation rel)
{
	int			i;

	for (i = 0; i < wb->nrels; i++)
		if (wb->rels[i] == rel)
		{
			wb->rels[i] = wb->rels[--wb->nrels];
			return;
		}
}

/*
 * Ask the kernel to start writing back the dirty pages of the job's
 * relations, at most every AC_WRITEBACK_US; not with run_flush_after = 0
 * (the kernel decides, as for other sessions).
 */
void
ac_writeback(AcWriteback *wb, TimestampTz now)
{
	int			i;

	if (archive_cluster_run_flush_after <= 0 || wb->nrels == 0 ||
		now - wb->last < AC_WRITEBACK_US)
		return;
	wb->last = now;
	wb->requests++;
	elog(DEBUG2, "archive_cluster: writing back %d relations", wb->nrels);
	for (i = 0; i < wb->nrels; i++)
	{
		SMgrRelation smgr = RelationGetSmgr(wb->rels[i]);
		BlockNumber nblocks = smgrnblocks(smgr, MAIN_FORKNUM);

		if (nblocks > 0)
			smgrwriteback(smgr, MAIN_FORKNUM, 0, nblocks);
	}
}
