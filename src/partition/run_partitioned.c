/*-------------------------------------------------------------------------
 *
 * run_partitioned.c
 *		archive_cluster_run() on a registered partitioned table (through
 *		ac_partitioned_run_hook, archive/table_job.c): a pass over each of
 *		its closed leaves that is due, one after another, in the caller's
 *		transaction (the worker passes one leaf per transaction).  A pass
 *		over a leaf is due when
 *		- no pass went through it to the end yet (a new closed leaf, one a
 *		  pass gave way in, one restored from a dump);
 *		- force;
 *		and, measured once after each VACUUM of a settled leaf (the moved
 *		rows' index entries and the emptied pages are VACUUM's to clear):
 *		- rows lie beyond the pages it needs, after empty ones (after the
 *		  first pass and its VACUUM, all of them): a tail pass moves them
 *		  onto the lowest empty pages, so that the next VACUUM truncates
 *		  the file (leaf_space.c);
 *		- rows were written into it since (a backfill, updates): over keys
 *		  sampled from its cluster index, the pages beyond a key's ideal
 *		  plus one are archive_cluster.compaction_threshold of its pages or
 *		  more, as compaction measures an archive, once VACUUM has removed
 *		  the index entries of the rows the last pass moved.
 *		A closed leaf that a logical replication subscription writes into
 *		(or into a table above it) is left alone, unless
 *		archive_cluster.allow_on_subscriber.
 *		Each pass is recorded in the run history (kind 'pass', the leaf
 *		in its detail).  The call stops when a pass gives way: every leaf
 *		it passed stays locked until it commits, so it looks for waiters on
 *		all of them.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <math.h>

#include "access/genam.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_type_d.h"
#include "common/pg_prng.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/bufpage.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/resowner.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "archive/key_sample.h"
#include "archive/table_job.h"
#include "base/cluster_index.h"
#include "base/guc.h"
#include "base/lock_waiters.h"
#include "base/util.h"
#include "partition/leaf_pass.h"
#include "partition/leaf_space.h"
#include "partition/leaves.h"
#include "partition/resume_key.h"
#include "partition/run_partitioned.h"
#include "registry/config.h"
#include "registry/partitioned.h"
#include "registry/replication.h"
#include "pace/replica_wait.h"

/* keys sampled to decide whether a settled leaf needs another pass */
#define AC_LEAF_SAMPLE_KEYS 100

/*
 * The share of a settled leaf's pages that another pass would save when
 * reading a key's rows, over keys sampled from its cluster index: a key
 * whose rows lie together spans at most its ideal pages (ceil(rows x row
 * bytes / usable page bytes)) plus one it shares with its neighbours; pages
 * beyond that came from rows written since (a backfill, updates).  Read
 * after a VACUUM (ac_leaf_due), whose counts it uses.  0 when a
 * lock on the leaf is not granted at once (the lock is released after).
 */
static double
ac_leaf_loose_share(AcPartitionedConfig *cfg, Oid leaf)
{
	Relation	rel;
	Relation	index;
	Oid			indexid;
	AcKeys		keys;
	AcTierCounts counts;
	pg_prng_state rng;
	double		rowbytes;
	double		usable = BLCKSZ - SizeOfPageHeaderData;
	double		excess = 0;
	double		total = 0;
	int			i;

	if (!ConditionalLockRelationOid(leaf, AccessShareLock))
		return 0;
	rel = try_relation_open(leaf, NoLock);
	if (rel == NULL)
	{
		UnlockRelationOid(leaf, AccessShareLock);
		return 0;
	}
	indexid = ac_cluster_index(rel, cfg->cluster_by, cfg->ncluster);
	if (!OidIsValid(indexid))
	{
		relation_close(rel, AccessShareLock);
		return 0;
	}
	index = index_open(indexid, AccessShareLock);
	ac_keys_init(&keys, index);
	pg_prng_seed(&rng, 0);
	ac_sample_keys(index, AC_LEAF_SAMPLE_KEYS, &rng, &keys);
	PushActiveSnapshot(GetTransactionSnapshot());
	ac_count_tier(rel, index, &keys, NULL, &counts);
	PopActiveSnapshot();
	/*
	 * A row's bytes on a page as the leaf stores them, from its pages and
	 * rows when VACUUM counted them: the planner's width of a column never
	 * analyzed is a guess (32 bytes for text), which would make every leaf
	 * look loose.  Pages part empty make it larger, and the leaf less loose.
	 */
	rowbytes = rel->rd_rel->reltuples > 0 ?
		RelationGetNumberOfBlocks(rel) * usable / rel->rd_rel->reltuples : ac_row_bytes(rel);
	for (i = 0; i < keys.nkeys; i++)
	{
		double		ideal = ceil(counts.rows[i] * rowbytes / usable);

		total += counts.pages[i];
		if (counts.pages[i] > ideal + 1)
			excess += counts.pages[i] - ideal - 1;
	}
	index_close(index, AccessShareLock);
	relation_close(rel, AccessShareLock);
	return total > 0 ? excess / total : 0;
}

/*
 * When VACUUM last ran on leaf (0: never, as far as the statistics know):
 * until then, its indexes still hold the entries of the rows the last pass
 * moved, and the pages of those would count as loose.
 */
static TimestampTz
ac_leaf_vacuumed_at(Oid leaf)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];
	TimestampTz result = 0;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	values[0] = ObjectIdGetDatum(leaf);
	if (SPI_execute_with_args("SELECT GREATEST(last_vacuum, last_autovacuum)"
							  " FROM pg_catalog.pg_stat_all_tables WHERE relid OPERATOR(pg_catalog.=) $1",
							  1, argtypes, values, NULL, true, 1) == SPI_OK_SELECT &&
		SPI_processed == 1)
	{
		bool		isnull;
		Datum		d = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);

		if (!isnull)
			result = DatumGetTimestampTz(d);
	}
	SPI_finish();
	return result;
}

/*
 * Why a pass over this leaf is due (a closed one), or NULL if it is not;
 * *tail: where a tail pass starts (InvalidBlockNumber: a whole pass);
 * *subscribed (if not NULL): not, because a subscription writes into it.
 */
const char *
ac_leaf_due(AcPartitionedConfig *cfg, Oid leaf, bool force, bool *subscribed,
			BlockNumber *tail)
{
	AcLeafState st;
	TimestampTz vacuumed_at;
	Oid			target;

	*tail = InvalidBlockNumber;
	if (subscribed)
		*subscribed = false;
	if (ac_leaf_closed(cfg, leaf, true) == AC_OPEN)
		return NULL;
	/* a subscription's target is left alone, as a registered table's tiers */
	if (!archive_cluster_allow_on_subscriber && ac_leaf_subscription(leaf, &target) != NULL)
	{
		if (subscribed)
			*subscribed = true;
		return NULL;
	}
	ac_leaf_state(leaf, &st);
	/* a tail pass that stopped: its tail measured again at once */
	if (ac_resume_is_tail_mark(st.resume_at))
	{
		*tail = ac_leaf_tail_start(leaf);
		if (*tail != InvalidBlockNumber)
			return "tail";
		ac_leaf_checked(leaf, ac_leaf_vacuumed_at(leaf));
		return NULL;
	}
	if (st.resume_at != NULL)
		return "resumed";
	if (st.settled_at == 0)
		return "first pass";
	if (force)
		return "forced";
	/* a settled leaf is measured once after each VACUUM */
	vacuumed_at = ac_leaf_vacuumed_at(leaf);
	if (vacuumed_at <= st.last_pass_at || vacuumed_at <= st.checked_at)
		return NULL;
	*tail = ac_leaf_tail_start(leaf);
	if (*tail != InvalidBlockNumber)
		return "tail";
	if (ac_leaf_loose_share(cfg, leaf) >= Max(archive_cluster_compaction_threshold, 0.001))
		return "rows written since";
	ac_leaf_checked(leaf, vacuumed_at);
	return NULL;
}

/* Record one pass in the run history. */
void
ac_log_pass(AcPartitionedConfig *cfg, Oid leaf, const char *why, AcLeafPass *pass,
			TimestampTz started, const char *started_by, Oid run_as)
{
	AcRunLog	log;

	memset(&log, 0, sizeof(log));
	log.relation = cfg->relation;
	log.kind = AC_KIND_PASS;
	log.started = started;
	log.finished = GetCurrentTimestamp();
	log.rows = pass->rows;
	log.bytes = pass->bytes;
	log.batches = pass->pages > 0 ? 1 : 0;
	log.paced_us = pass->paced_us;
	log.started_by = started_by;
	log.run_as = run_as;
	log.rows_busy = pass->busy;
	log.detail = psprintf("leaf %s (%s): %lld pages%s; %s", ac_qualified_name(leaf), why,
						  (long long) pass->pages, pass->gave_way ? ", gave way" : "",
						  pass->detail ? pass->detail : "");
	ac_log_run(&log);
}

/*
 * Pass the due closed leaves of cfg's partitioned table, at most max_leaves
 * of them (0: all), in the caller's transaction.  An error in one leaf is a
 * WARNING (recorded), and the others go on; a cancel ends the call.
 */
void
ac_run_partitioned(AcPartitionedConfig *cfg, bool force, int max_leaves,
				   const char *started_by, AcRunResult *res)
{
	List	   *leaves = ac_partition_leaves(cfg);
	List	   *held = NIL;
	ListCell   *lc;
	int			passed = 0;
	int			nsubscribed = 0;
	int64		waited = 0;
	bool		subscribed;
	BlockNumber tail;
	bool		gave_way = false;

	memset(res, 0, sizeof(*res));
	res->started = GetCurrentTimestamp();
	foreach(lc, leaves)
	{
		AcLeaf	   *l = lfirst(lc);
		MemoryContext oldcxt = CurrentMemoryContext;
		ResourceOwner oldowner = CurrentResourceOwner;
		TimestampTz started = GetCurrentTimestamp();
		MemoryContext leafcxt;
		const char *volatile why;
		AcLeafPass	pass;

		CHECK_FOR_INTERRUPTS();
		if (max_leaves > 0 && passed >= max_leaves)
		{
			res->more = true;
			break;
		}
		if (ac_leaves_have_waiters(held) || ac_xact_has_waiters())
		{
			gave_way = true;
			break;
		}
		/* what the pass allocates goes with it, failed or not */
		leafcxt = AllocSetContextCreate(oldcxt, "archive_cluster pass", ALLOCSET_DEFAULT_SIZES);
		why = NULL;
		/* a lagging standby or subscriber: waited for before the leaf is locked */
		if (!ac_call_wait_for_replicas(get_rel_name(cfg->relation), true, &waited))
		{
			MemoryContextDelete(leafcxt);
			res->lagged = true;
			break;
		}
		res->replica_us += waited;
		res->paced_us += waited;
		waited = 0;
		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(leafcxt);
		PG_TRY();
		{
			why = ac_leaf_due(cfg, l->leaf, force, &subscribed, &tail);
			if (why != NULL)
				ac_pass_leaf(cfg, l->leaf, held, tail, 0, &pass);
			/* a writer of a row it moved waits for this subtransaction's ID */
			ac_xact_watch_current();
			ReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(oldcxt);
			CurrentResourceOwner = oldowner;
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(oldcxt);
			edata = CopyErrorData();
			FlushErrorState();
			RollbackAndReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(oldcxt);
			CurrentResourceOwner = oldowner;
			MemoryContextDelete(leafcxt);
			/* a cancel, or running out of disk or memory, ends the call */
			if (edata->sqlerrcode == ERRCODE_QUERY_CANCELED ||
				ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_INSUFFICIENT_RESOURCES)
				ReThrowError(edata);
			ac_report_caught(edata, WARNING, get_rel_name(l->leaf));
			ac_log_run_error(cfg->relation, AC_KIND_PASS, started, started_by,
							 ac_relation_owner(cfg->relation), edata->message);
			FreeErrorData(edata);
			continue;
		}
		PG_END_TRY();
		if (subscribed)
			nsubscribed++;
		if (why == NULL)
		{
			MemoryContextDelete(leafcxt);
			continue;
		}

		held = lappend_oid(held, l->leaf);
		if (pass.rows > 0 || pass.busy > 0)
			ac_log_pass(cfg, l->leaf, why, &pass, started, started_by,
						ac_relation_owner(cfg->relation));
		MemoryContextDelete(leafcxt);
		res->rows += pass.rows;
		res->bytes += pass.bytes;
		res->paced_us += pass.paced_us;
		if (pass.rows > 0)
			res->batches++;
		passed++;
		if (pass.gave_way)
		{
			gave_way = true;
			break;
		}
	}
	if (nsubscribed > 0)
		ereport(NOTICE,
				(errmsg_plural("skipping %d partition of \"%s\": a logical replication subscription writes into it",
							   "skipping %d partitions of \"%s\": a logical replication subscription writes into them",
							   nsubscribed, nsubscribed, get_rel_name(cfg->relation)),
				 errhint("Cluster the partitions on the publisher; see archive_cluster.allow_on_subscriber.")));
	res->finished = GetCurrentTimestamp();
	if (res->lagged)
		res->status = "stopped: replica lag";
	else if (gave_way)
		res->status = "gave way";
	else if (res->batches > 0)
		res->status = "passed";
	else
		res->status = "nothing due";
}

/* ac_partitioned_run_hook: archive_cluster_run() on a registered partitioned table */
void
ac_run_partitioned_call(Oid relation, const AcRunArgs *args, AcRunResult *res)
{
	AcPartitionedConfig cfg;

	if (!ac_load_partitioned(relation, &cfg))
	{
		memset(res, 0, sizeof(*res));
		res->started = res->finished = GetCurrentTimestamp();
		res->status = "not registered";
		return;
	}
	/*
	 * One leaf per call unless max_batches says more: the first call after
	 * registering would otherwise rewrite every closed leaf in one
	 * transaction (twice the table's size on disk, every leaf locked).
	 */
	ac_run_partitioned(&cfg, args->force, args->max_batches > 0 ? args->max_batches : 1,
					   ac_caller(), res);
}
