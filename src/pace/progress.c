/*-------------------------------------------------------------------------
 *
 * progress.c
 *		What each running job (a run or a compaction, of the worker or of a
 *		call) is doing, for archive_cluster_progress(): its phase, rows
 *		done, WAL written, current pace and why.
 *
 *		One slot per backend in shared memory, written only by its backend
 *		and read by anyone with the changecount protocol of PostgreSQL's own
 *		backend status (backend_status.h): the writer increments the count,
 *		writes, increments it again; a reader copies the slot and retries
 *		while the count was odd or moved.  The writer never waits.  A slot
 *		is cleared when its job ends and when its transaction ends
 *		(an error).  Core's pg_stat_progress_* cannot be borrowed: its
 *		command types are a closed enum.  Without the library preloaded
 *		there are no slots and no rows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/twophase.h"
#include "catalog/pg_class.h"
#include "access/xact.h"
#include "catalog/pg_authid.h"
#include "executor/instrument.h"
#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/ipc.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "storage/shmem.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "compat.h"
#include "pace/progress.h"

PG_FUNCTION_INFO_V1(archive_cluster_progress);

typedef struct AcProgressSlot
{
	uint32		changecount;	/* odd while being written */
	int			pid;			/* 0: no job */
	Oid			dboid;
	Oid			relid;
	Oid			run_as;
	char		kind;			/* 'a': a run, 'c': a compaction, 'p': a pass over a leaf partition */
	AcPhase		phase;
	AcPaceReason reason;
	bool		worker;			/* the worker's, not a call's */
	TimestampTz started;
	int64		rows_planned;	/* rows the batch collected; 0: not known yet */
	int64		rows_done;
	int			batches;
	int64		wal_bytes;		/* written by the job */
	double		rate;			/* MB/s it keeps to; 0: not paced */
	int64		paced_us;
	int64		replica_us;
	int64		lag_bytes;		/* of the worst peer, when waiting for it */
} AcProgressSlot;

static AcProgressSlot *ac_progress = NULL;
static int	ac_progress_nslots = 0;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;
/* this backend's slot while it runs a job, and its (sub)transaction's level */
static AcProgressSlot *ac_my_progress = NULL;
static int	ac_my_level = 0;
static uint64 ac_my_wal_start = 0;

static const char *const ac_phase_names[] = {
	[AC_PHASE_STARTING] = "starting",
	[AC_PHASE_SCANNING] = "collecting rows",
	[AC_PHASE_DELETING] = "deleting",
	[AC_PHASE_SORTING] = "sorting",
	[AC_PHASE_WRITING] = "writing",
	[AC_PHASE_WAITING_REPLICA] = "waiting for a lagging standby or subscriber"
};

static const char *const ac_reason_names[] = {
	[AC_PACE_ALONE] = "alone",
	[AC_PACE_CEILING] = "ceiling",
	[AC_PACE_COMMITS] = "commit latency",
	[AC_PACE_FLOOR] = "floor",
	[AC_PACE_RATE] = "fixed rate",
	[AC_PACE_OFF] = "off"
};

static int
ac_progress_slots(void)
{
	return MaxBackends + NUM_AUXILIARY_PROCS + max_prepared_xacts;
}

static void
ac_progress_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(MAXALIGN(mul_size(ac_progress_slots(), sizeof(AcProgressSlot))));
}

static void
ac_progress_startup(void)
{
	bool		found;
	Size		size;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();
	ac_progress_nslots = ac_progress_slots();
	size = mul_size(ac_progress_nslots, sizeof(AcProgressSlot));
	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ac_progress = ShmemInitStruct("archive_cluster progress", size, &found);
	if (!found)
		memset(ac_progress, 0, size);
	LWLockRelease(AddinShmemInitLock);
}

#define AC_PROGRESS_WRITE_BEGIN(s) \
	do { (s)->changecount++; pg_write_barrier(); } while (0)
#define AC_PROGRESS_WRITE_END(s) \
	do { pg_write_barrier(); (s)->changecount++; } while (0)

/* the job's transaction ended (an error: its slot is cleared) */
static void
ac_progress_xact_callback(XactEvent event, void *arg)
{
	if (event == XACT_EVENT_ABORT || event == XACT_EVENT_COMMIT ||
		event == XACT_EVENT_PARALLEL_ABORT || event == XACT_EVENT_PREPARE)
		ac_progress_end();
}

/* a subtransaction the job ran in aborted (a table's error in a call over several) */
static void
ac_progress_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							 SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_ABORT_SUB && ac_my_progress != NULL &&
		ac_my_level >= GetCurrentTransactionNestLevel())
		ac_progress_end();
}

/* Called from _PG_init() while preloading. */
void
ac_progress_init_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ac_progress_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ac_progress_startup;
	RegisterXactCallback(ac_progress_xact_callback, NULL);
	RegisterSubXactCallback(ac_progress_subxact_callback, NULL);
}

/* the owner of a relation, InvalidOid when it is gone (no error) */
static Oid
ac_progress_owner(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			owner = InvalidOid;

	if (HeapTupleIsValid(tup))
	{
		owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
		ReleaseSysCache(tup);
	}
	return owner;
}

/*
 * A job of kind ('a' a run, 'c' a compaction) on registered table relid
 * starts; it runs as the owner of owned_by (its current tier).
 */
void
ac_progress_begin(char kind, Oid relid, Oid owned_by, bool worker)
{
	AcProgressSlot *s;
	int			n = ac_proc_number();
	Oid			run_as;

	if (ac_progress == NULL || n < 0 || n >= ac_progress_nslots)
		return;
	run_as = ac_progress_owner(owned_by);
	s = &ac_progress[n];
	ac_my_progress = s;
	ac_my_level = GetCurrentTransactionNestLevel();
	ac_my_wal_start = pgWalUsage.wal_bytes;
	AC_PROGRESS_WRITE_BEGIN(s);
	s->pid = MyProcPid;
	s->dboid = MyDatabaseId;
	s->relid = relid;
	s->run_as = run_as;
	s->kind = kind;
	s->worker = worker;
	s->phase = AC_PHASE_STARTING;
	s->reason = AC_PACE_ALONE;
	s->started = GetCurrentTimestamp();
	s->rows_planned = s->rows_done = 0;
	s->batches = 0;
	s->wal_bytes = 0;
	s->rate = 0;
	s->paced_us = s->replica_us = s->lag_bytes = 0;
	AC_PROGRESS_WRITE_END(s);
}

/* The job's phase now. */
void
ac_progress_phase(AcPhase phase)
{
	AcProgressSlot *s = ac_my_progress;

	if (s == NULL || s->phase == phase)
		return;
	AC_PROGRESS_WRITE_BEGIN(s);
	s->phase = phase;
	AC_PROGRESS_WRITE_END(s);
	/* with the pacer's steps (pace.c), for a diagnosis */
	elog(DEBUG1, "archive_cluster: phase %s", ac_phase_names[phase]);
}

/* A batch of "planned" rows starts (batches counts it). */
void
ac_progress_batch(int64 planned)
{
	AcProgressSlot *s = ac_my_progress;

	if (s == NULL)
		return;
	AC_PROGRESS_WRITE_BEGIN(s);
	s->batches++;
	s->rows_planned = planned;
	s->rows_done = 0;
	AC_PROGRESS_WRITE_END(s);
}

/* Rows of the batch done so far. */
void
ac_progress_rows(int64 done)
{
	AcProgressSlot *s = ac_my_progress;

	if (s == NULL)
		return;
	AC_PROGRESS_WRITE_BEGIN(s);
	s->rows_done = done;
	AC_PROGRESS_WRITE_END(s);
}

/* The pace now (pace.c, every look): rate in MB/s (0: none), why, time slept. */
void
ac_progress_pace(double rate, AcPaceReason reason, int64 paced_us)
{
	AcProgressSlot *s = ac_my_progress;

	if (s == NULL)
		return;
	AC_PROGRESS_WRITE_BEGIN(s);
	s->rate = rate;
	s->reason = reason;
	s->paced_us = paced_us;
	s->wal_bytes = (int64) (pgWalUsage.wal_bytes - ac_my_wal_start);
	AC_PROGRESS_WRITE_END(s);
}

/*
 * Waiting for a lagging peer, lag_bytes behind (again at each look while it
 * waits); or done waiting, after waited_us.
 */
void
ac_progress_waiting(bool waiting, int64 lag_bytes, int64 waited_us)
{
	static AcPhase before = AC_PHASE_STARTING;
	AcProgressSlot *s = ac_my_progress;

	if (s == NULL)
		return;
	AC_PROGRESS_WRITE_BEGIN(s);
	if (waiting && s->phase != AC_PHASE_WAITING_REPLICA)
	{
		before = s->phase;
		s->phase = AC_PHASE_WAITING_REPLICA;
	}
	else if (!waiting && s->phase == AC_PHASE_WAITING_REPLICA)
		s->phase = before;
	s->lag_bytes = waiting ? lag_bytes : 0;
	s->replica_us += waited_us;
	AC_PROGRESS_WRITE_END(s);
}

/* The job ended (or its transaction did). */
void
ac_progress_end(void)
{
	AcProgressSlot *s = ac_my_progress;

	if (s == NULL)
		return;
	AC_PROGRESS_WRITE_BEGIN(s);
	s->pid = 0;
	AC_PROGRESS_WRITE_END(s);
	ac_my_progress = NULL;
}

/*
 * archive_cluster_progress(): one row per running job that the caller may
 * see (run as a role whose privileges it has, or it has pg_read_all_stats's,
 * as pg_stat_activity shows queries): its backend's pid,
 * database, table, the role it runs as, kind, whether the worker's, when it
 * started, phase, batches, rows planned and done of the current batch, WAL
 * written, rate, why, time paced and waited for replicas, a peer's lag.
 */
Datum
archive_cluster_progress(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	if (ac_progress == NULL)
		return (Datum) 0;
	for (i = 0; i < ac_progress_nslots; i++)
	{
		volatile AcProgressSlot *v = &ac_progress[i];
		AcProgressSlot s;
		Datum		values[17];
		bool		nulls[17] = {false};
		int			tries;

		if (v->pid == 0)
			continue;
		for (tries = 0;; tries++)
		{
			uint32		before = v->changecount;

			pg_read_barrier();
			memcpy(&s, (const void *) v, sizeof(s));
			pg_read_barrier();
			if (before == v->changecount && (before & 1) == 0)
				break;
			if (tries > 1000)
			{
				s.pid = 0;		/* written without end: skip it */
				break;
			}
			CHECK_FOR_INTERRUPTS();
		}
		if (s.pid == 0)
			continue;
		/* a job is seen by its role (the table's owner) and pg_read_all_stats */
		if (!has_privs_of_role(GetUserId(), s.run_as) &&
			!has_privs_of_role(GetUserId(), ROLE_PG_READ_ALL_STATS))
			continue;
		values[0] = Int32GetDatum(s.pid);
		values[1] = ObjectIdGetDatum(s.dboid);
		values[2] = ObjectIdGetDatum(s.relid);
		values[3] = ObjectIdGetDatum(s.run_as);
		values[4] = CStringGetTextDatum(s.kind == 'c' ? "compaction" :
										   s.kind == 'p' ? "partition pass" : "archive");
		values[5] = BoolGetDatum(s.worker);
		values[6] = TimestampTzGetDatum(s.started);
		values[7] = CStringGetTextDatum(ac_phase_names[s.phase]);
		values[8] = Int32GetDatum(s.batches);
		values[9] = Int64GetDatum(s.rows_planned);
		nulls[9] = s.rows_planned == 0;
		values[10] = Int64GetDatum(s.rows_done);
		values[11] = Int64GetDatum(s.wal_bytes);
		values[12] = Float8GetDatum(s.rate);
		nulls[12] = s.rate <= 0;
		values[13] = CStringGetTextDatum(ac_reason_names[s.reason]);
		values[14] = Int64GetDatum(s.paced_us);
		values[15] = Int64GetDatum(s.replica_us);
		values[16] = Int64GetDatum(s.lag_bytes);
		nulls[16] = s.lag_bytes <= 0;
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
