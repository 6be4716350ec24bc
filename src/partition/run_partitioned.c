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
#include "storage/proc.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "archive/key_sample.h"
#include "archive/table_job.h"
#include "base/cluster_index.h"
#include "base/guc.h"
#include "base/lock_waiters.h"
#include "base/subxact.h"
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
 * ac_leaf_loose_share() as the partitioned table's owner, as a pass runs:
 * reading the cluster index calls its operator class's functions, which
 * are the owner's code, and the worker or a superuser's call must not run
 * them with its own rights.
 */
static double
ac_leaf_loose_share_as_owner(AcPartitionedConfig *cfg, Oid leaf)
{
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	double		share;

	ac_switch_to_owner(cfg->relation, &save_userid, &save_sec_context, &save_nestlevel);
	share = ac_leaf_loose_share(cfg, leaf);
	ac_restore_user(save_userid, save_sec_context, save_nestlevel);
	return share;
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

/* A settled leaf measured after the VACUUM of vacuumed_at is not due. */
static void
ac_leaf_not_due(Oid leaf, TimestampTz vacuumed_at, AcLeafCheck *check)
{
	if (check)
	{
		check->found = true;
		check->vacuumed_at = vacuumed_at;
	}
	else
		ac_leaf_checked(leaf, vacuumed_at);
}

/*
 * Why a pass over this leaf is due (a closed one), or NULL if it is not;
 * *tail: where a tail pass starts (InvalidBlockNumber: a whole pass);
 * *subscribed (if not NULL): not, because a subscription writes into it.
 * A settled leaf measured and found not due is recorded (ac_leaf_checked)
 * so that it is not measured again before the next VACUUM; with check not
 * NULL, the caller records it (check->found).
 */
const char *
ac_leaf_due(AcPartitionedConfig *cfg, Oid leaf, bool force, bool *subscribed,
			BlockNumber *tail, AcLeafCheck *check)
{
	AcLeafState st;
	TimestampTz vacuumed_at;
	Oid			target;

	*tail = InvalidBlockNumber;
	if (check)
		memset(check, 0, sizeof(*check));
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
		ac_leaf_not_due(leaf, ac_leaf_vacuumed_at(leaf), check);
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
	if (ac_leaf_loose_share_as_owner(cfg, leaf) >= Max(archive_cluster_compaction_threshold, 0.001))
		return "rows written since";
	ac_leaf_not_due(leaf, vacuumed_at, check);
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

/* one leaf of a manual call, in a subtransaction of its own (ac_subxact_call) */
typedef struct AcLeafCall
{
	AcPartitionedConfig *cfg;
	Oid			leaf;
	bool		force;
	List	   *held;
	const char *why;			/* due: why; NULL: not due */
	bool		subscribed;
	AcLeafCheck check;
	AcLeafPass	pass;
} AcLeafCall;

static void
ac_leaf_call(void *arg)
{
	AcLeafCall *c = (AcLeafCall *) arg;
	BlockNumber tail;

	c->why = ac_leaf_due(c->cfg, c->leaf, c->force, &c->subscribed, &tail, &c->check);
	if (c->why != NULL)
		ac_pass_leaf(c->cfg, c->leaf, c->held, tail, 0, &c->pass);
	/* a writer of a row it moved waits for this subtransaction's ID */
	ac_xact_watch_current();
}

/*
 * A later leaf of a manual call: the leaves passed before it stay locked
 * until the call's transaction ends, so a lagging standby or subscriber is
 * not waited for; the call stops.
 */
static bool
ac_replicas_keep_up(const char *relname)
{
	int64		lag;
	int			pid;

	if (!ac_replicas_lag_over(&lag, &pid))
		return true;
	ac_report_replica_lag(NOTICE, relname, true, lag, pid, 0);
	return false;
}

/* a settled leaf found not due, recorded at the end of a manual call */
typedef struct AcLeafChecked
{
	Oid			leaf;
	TimestampTz vacuumed_at;
} AcLeafChecked;

/* the leaves of a manual call found not due (a List of AcLeafChecked) */
static void
ac_record_checked(void *arg)
{
	ListCell   *lc;

	foreach(lc, (List *) arg)
	{
		AcLeafChecked *ch = lfirst(lc);

		ac_leaf_checked(ch->leaf, ch->vacuumed_at);
	}
}

/*
 * May this transaction start another subtransaction that writes, without
 * overflowing its backend's cache of subtransaction IDs?  A run of every
 * table before, or earlier calls in the same transaction block, count too.
 */
static bool
ac_subxids_left(void)
{
	return !MyProc->subxidStatus.overflowed &&
		MyProc->subxidStatus.count < PGPROC_MAX_CACHED_SUBXIDS - 1;
}

/*
 * Pass the due closed leaves of cfg's partitioned table, at most max_leaves
 * of them (1 to AC_LEAVES_PER_CALL), in the caller's transaction.  An error
 * in one leaf is a WARNING (recorded), and the others go on; a cancel ends
 * the call.  Each leaf is a subtransaction; one that writes takes a
 * transaction ID, and a backend caches at most PGPROC_MAX_CACHED_SUBXIDS of
 * them for others' snapshots (more make every snapshot of every session
 * slower until the call ends): so the leaves found not due are recorded
 * after the loop, in one subtransaction, and the call stops after
 * AC_LEAVES_PER_CALL leaves or before the cache is full.
 */
void
ac_run_partitioned(AcPartitionedConfig *cfg, bool force, int max_leaves,
				   const char *started_by, AcRunResult *res)
{
	List	   *leaves = ac_partition_leaves(cfg);
	List	   *held = NIL;
	List	   *checked = NIL;
	ListCell   *lc;
	int			passed = 0;
	int			nsubscribed = 0;
	int64		waited = 0;
	bool		gave_way = false;

	max_leaves = Max(1, Min(max_leaves, AC_LEAVES_PER_CALL));
	memset(res, 0, sizeof(*res));
	res->started = GetCurrentTimestamp();
	foreach(lc, leaves)
	{
		AcLeaf	   *l = lfirst(lc);
		MemoryContext oldcxt = CurrentMemoryContext;
		TimestampTz started = GetCurrentTimestamp();
		MemoryContext leafcxt;
		ErrorData  *edata;
		AcLeafCall	c;

		CHECK_FOR_INTERRUPTS();
		if (passed >= max_leaves || (passed > 0 && !ac_subxids_left()))
		{
			res->more = true;
			break;
		}
		if (ac_leaves_have_waiters(held) || ac_xact_has_waiters())
		{
			gave_way = true;
			break;
		}
		/* a lagging standby or subscriber: waited for before the first leaf is locked */
		if (held == NIL ?
			!ac_call_wait_for_replicas(get_rel_name(cfg->relation), true, &waited) :
			!ac_replicas_keep_up(get_rel_name(cfg->relation)))
		{
			res->lagged = true;
			break;
		}
		res->replica_us += waited;
		res->paced_us += waited;
		waited = 0;
		/* what the pass allocates goes with it, failed or not */
		leafcxt = AllocSetContextCreate(oldcxt, "archive_cluster pass", ALLOCSET_DEFAULT_SIZES);
		memset(&c, 0, sizeof(c));
		c.cfg = cfg;
		c.leaf = l->leaf;
		c.force = force;
		c.held = held;
		edata = ac_subxact_call(ac_leaf_call, &c, leafcxt);
		if (edata != NULL)
		{
			MemoryContextDelete(leafcxt);
			/* running out of disk or memory ends the call */
			if (ERRCODE_TO_CATEGORY(edata->sqlerrcode) == ERRCODE_INSUFFICIENT_RESOURCES)
				ReThrowError(edata);
			ac_report_caught(edata, WARNING, get_rel_name(l->leaf));
			ac_log_run_error(cfg->relation, AC_KIND_PASS, started, started_by,
							 ac_relation_owner(cfg->relation), edata->message);
			FreeErrorData(edata);
			continue;
		}
		if (c.subscribed)
			nsubscribed++;
		if (c.check.found)
		{
			AcLeafChecked *ch = palloc(sizeof(AcLeafChecked));

			ch->leaf = l->leaf;
			ch->vacuumed_at = c.check.vacuumed_at;
			checked = lappend(checked, ch);
		}
		if (c.why == NULL)
		{
			MemoryContextDelete(leafcxt);
			continue;
		}
		held = lappend_oid(held, l->leaf);
		if (c.pass.rows > 0 || c.pass.busy > 0)
			ac_log_pass(cfg, l->leaf, c.why, &c.pass, started, started_by,
						ac_relation_owner(cfg->relation));
		MemoryContextDelete(leafcxt);
		res->rows += c.pass.rows;
		res->bytes += c.pass.bytes;
		res->paced_us += c.pass.paced_us;
		if (c.pass.rows > 0)
			res->batches++;
		passed++;
		if (c.pass.gave_way)
		{
			gave_way = true;
			break;
		}
	}
	/* in one subtransaction: an error there (only a check lost) is a WARNING */
	if (checked != NIL)
	{
		ErrorData  *edata = ac_subxact_call(ac_record_checked, checked, NULL);

		if (edata != NULL)
		{
			ac_report_caught(edata, WARNING, get_rel_name(cfg->relation));
			FreeErrorData(edata);
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
