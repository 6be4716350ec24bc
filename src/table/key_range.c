/*-------------------------------------------------------------------------
 *
 * key_range.c
 *		Table mode: the range skip of the cross-tier unique check.  A key
 *		written to <t> that is greater than every key of the archive's
 *		counterpart index cannot be archived: it is not looked up there.
 *
 *		The bound is the archive index's rightmost entry, read whatever its
 *		visibility (an upper bound of every key archived or being archived),
 *		and cached per backend with the value of a shared generation counter
 *		(one of 256, by the archive's OID) that every writer adding keys to
 *		the archive moves:
 *		- a run's batch counts itself active and moves the counter before
 *		  its first delete from <t>, and moves it again (no longer active)
 *		  once its rows' index entries are all in the archive (mover.c);
 *		- a row written to the archive by a statement moves it after the
 *		  row's index entries are in, before its key is looked up in <t>
 *		  (tier_unique.c).
 *		A cached bound is used only while the counter has not moved since it
 *		was read, and it was read while no batch was active.
 *
 *		Why that is enough.  An insert I of key K into <t> checks after its
 *		own entry is in <t>'s unique index.  A batch B moving K deletes K
 *		from <t> after its first move of the counter; I's unique index saw
 *		that delete (waited for B, or saw it committed), so I reads the
 *		counter after B's first move: a bound read before it is dropped, and
 *		one read after it was read either while B was active (never cached)
 *		or after B's entries were in the archive (so it covers K).  A
 *		statement W writing K to the archive moves the counter, then looks
 *		in <t>: either I reads the counter after W's move (I reads the bound
 *		again, which covers K, and finds W's row), or W's move, hence W's
 *		look-up, came after I's entry was in <t>, and W finds I's row.
 *
 *		Without the library preloaded there is no shared memory: every key
 *		is looked up.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/table.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/shmem.h"
#include "utils/datum.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "compat.h"
#include "table/key_range.h"

#define AC_RANGE_COUNTERS 256

typedef struct AcRangeShared
{
	pg_atomic_uint64 gen[AC_RANGE_COUNTERS];
	pg_atomic_uint32 active[AC_RANGE_COUNTERS];
} AcRangeShared;

static AcRangeShared *ac_range = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
static int	ac_range_my_batch = -1;	/* counter of this backend's open batch */
static bool ac_range_exit_registered = false;

static inline int
ac_range_counter(Oid archive)
{
	return (int) ((archive ^ (MyDatabaseId * 0x9E3779B1U)) % AC_RANGE_COUNTERS);
}

static void
ac_range_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(sizeof(AcRangeShared)));
}

static void
ac_range_startup(void)
{
	bool		found;
	int			i;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ac_range = ShmemInitStruct("archive_cluster key ranges", sizeof(AcRangeShared), &found);
	if (!found)
		for (i = 0; i < AC_RANGE_COUNTERS; i++)
		{
			pg_atomic_init_u64(&ac_range->gen[i], 0);
			pg_atomic_init_u32(&ac_range->active[i], 0);
		}
	LWLockRelease(AddinShmemInitLock);
}

/* Called from _PG_init() while preloading. */
void
ac_key_range_init_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ac_range_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ac_range_startup;
}

/* a backend leaving with a batch open (FATAL) closes it */
static void
ac_range_exit(int code, Datum arg)
{
	ac_key_range_batch_end();
}

/*
 * A batch moving rows into archive begins, before its first delete from
 * <t>: active first, then the counter, so that whoever sees the new counter
 * sees the batch active.
 */
void
ac_key_range_batch_begin(Oid archive)
{
	int			c;

	if (ac_range == NULL)
		return;
	if (ac_range_my_batch >= 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot archive rows while a batch of another run is being written"),
				 errdetail("A run was started by code that the batch of another run executed.")));
	if (!ac_range_exit_registered)
	{
		before_shmem_exit(ac_range_exit, (Datum) 0);
		ac_range_exit_registered = true;
	}
	c = ac_range_counter(archive);
	pg_atomic_fetch_add_u32(&ac_range->active[c], 1);
	pg_atomic_fetch_add_u64(&ac_range->gen[c], 1);
	ac_range_my_batch = c;
}

/*
 * The batch's index entries are all in the archive (or it failed): the
 * counter moves again, then the batch is no longer active.
 */
void
ac_key_range_batch_end(void)
{
	int			c = ac_range_my_batch;

	if (ac_range == NULL || c < 0)
		return;
	ac_range_my_batch = -1;
	pg_atomic_fetch_add_u64(&ac_range->gen[c], 1);
	pg_atomic_fetch_sub_u32(&ac_range->active[c], 1);
}

/* A statement wrote a row with a new key to archive, not yet checked. */
void
ac_key_range_bump(Oid archive)
{
	if (ac_range == NULL)
		return;
	pg_atomic_fetch_add_u64(&ac_range->gen[ac_range_counter(archive)], 1);
}

/*
 * The range state of archive index "index" (a btree whose columns are all
 * ASC NULLS LAST), allocated in cxt; NULL if the skip cannot apply: no
 * shared memory, or another order.
 */
AcKeyRange *
ac_key_range_create(Relation index, Oid archive, MemoryContext cxt)
{
	AcKeyRange *r;
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	int			i;

	if (ac_range == NULL || index->rd_rel->relam != BTREE_AM_OID)
		return NULL;
	for (i = 0; i < nkeys; i++)
		if ((index->rd_indoption[i] & (INDOPTION_DESC | INDOPTION_NULLS_FIRST)) != 0)
			return NULL;

	r = MemoryContextAllocZero(cxt, sizeof(AcKeyRange));
	r->archive = archive;
	r->index = RelationGetRelid(index);
	r->nkeys = nkeys;
	for (i = 0; i < nkeys; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(index), i);

		fmgr_info_copy(&r->cmp[i], index_getprocinfo(index, i + 1, BTORDER_PROC), cxt);
		r->collation[i] = index->rd_indcollation[i];
		r->typlen[i] = att->attlen;
		r->typbyval[i] = att->attbyval;
	}
	r->boundcxt = AllocSetContextCreate(cxt, "archive_cluster key range", ALLOCSET_SMALL_SIZES);
	return r;
}

/*
 * Read the index's largest entry into r, with the counter read first.  Not
 * kept while a batch is active.
 */
static void
ac_range_refresh(AcKeyRange *r)
{
	int			c = ac_range_counter(r->archive);
	uint64		gen;
	uint32		active;
	Relation	heap;
	Relation	index;
	IndexScanDesc scan;
	MemoryContext old;
	int			i;

	r->bound_valid = false;
	pg_memory_barrier();
	gen = pg_atomic_read_u64(&ac_range->gen[c]);
	pg_memory_barrier();
	active = pg_atomic_read_u32(&ac_range->active[c]);
	pg_memory_barrier();
	if (active > 0)
		return;

	/* locked to the end of the transaction, as a scan would: then the index is there or gone */
	heap = table_open(r->archive, AccessShareLock);
	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(r->index)))
	{
		table_close(heap, NoLock);
		return;
	}
	index = index_open(r->index, AccessShareLock);
	scan = ac_index_beginscan(heap, index, SnapshotAny, 0, 0);
	scan->xs_want_itup = true;
	index_rescan(scan, NULL, 0, NULL, 0);
	MemoryContextReset(r->boundcxt);
	r->empty = index_getnext_tid(scan, BackwardScanDirection) == NULL;
	if (!r->empty)
	{
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];

		index_deform_tuple(scan->xs_itup, scan->xs_itupdesc, values, isnull);
		old = MemoryContextSwitchTo(r->boundcxt);
		for (i = 0; i < r->nkeys; i++)
		{
			r->bound_null[i] = isnull[i];
			r->bound[i] = isnull[i] ? (Datum) 0 :
				datumCopy(values[i], r->typbyval[i], r->typlen[i]);
		}
		MemoryContextSwitchTo(old);
	}
	index_endscan(scan);
	index_close(index, NoLock);
	table_close(heap, NoLock);
	r->bound_gen = gen;
	r->bound_valid = true;
}

/*
 * Is the key (in the index's column order) greater than every key of the
 * archive index?  False whenever that is not known.
 */
bool
ac_key_range_beyond(AcKeyRange *r, Datum *values, bool *isnull)
{
	uint64		gen;
	int			i;

	if (r == NULL)
		return false;
	pg_memory_barrier();
	gen = pg_atomic_read_u64(&ac_range->gen[ac_range_counter(r->archive)]);
	if (!r->bound_valid || gen != r->bound_gen)
		ac_range_refresh(r);
	if (!r->bound_valid)
		return false;
	if (r->empty)
		return true;
	for (i = 0; i < r->nkeys; i++)
	{
		int32		cmp;

		if (r->bound_null[i] || isnull[i])
			return false;		/* NULLS LAST: cannot tell */
		cmp = DatumGetInt32(FunctionCall2Coll(&r->cmp[i], r->collation[i],
											  values[i], r->bound[i]));
		if (cmp != 0)
			return cmp > 0;
	}
	return false;				/* equal */
}
