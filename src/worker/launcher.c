/*-------------------------------------------------------------------------
 *
 * launcher.c
 *		The launcher: a background worker, started with the server when the
 *		library is preloaded, that hands the pool's worker slots (pool.h) to
 *		the databases where archive_cluster has work, as autovacuum's
 *		launcher does.
 *
 *		The launcher connects to no database.  Each naptime it reads
 *		pg_database (a shared catalog) for the databases that are selected
 *		(archive_cluster.databases), connectable and not templates.  A
 *		database gets a worker (worker.c) when
 *		- it has not been looked at yet, or CREATE EXTENSION archive_cluster
 *		  committed there since (utility.c);
 *		- it has the extension and its last worker ended a naptime ago, or
 *		  that worker ran out of its time slice with work left;
 *		- it has no extension and extension_recheck_interval has passed.
 *		At most archive_cluster.max_workers run at once; the databases
 *		that wait are served oldest-served first, so each gets a worker
 *		after at most ceil(waiting / max_workers) turns of the others.  A
 *		worker makes one pass over its database and exits, and the
 *		postmaster wakes the launcher when it has gone.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "access/heapam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "tcop/tcopprot.h"
#include "utils/hsearch.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "base/guc.h"
#include "worker/launcher.h"
#include "compat.h"
#include "worker/pool.h"

PGDLLEXPORT void archive_cluster_launcher_main(Datum main_arg);

/* a worker that never attaches gives its slot up after this */
#define AC_STARTING_TIMEOUT_MS 60000

/* a worker still at a job this long after its job_timeout is ended */
#define AC_JOB_GRACE_MS 10000

/* the launcher's handles of the workers it started, by slot */
static BackgroundWorkerHandle **ac_handles = NULL;

/* when pg_database was last read, and the last lines of the log */
static TimestampTz ac_last_refresh = 0;
static TimestampTz ac_enabled_since = 0;	/* 0: archive_cluster.enabled is off */
static TimestampTz ac_last_wait_log = 0;
static TimestampTz ac_last_full_log = 0;

/* Called from _PG_init() while preloading: the launcher starts with the server. */
void
ac_launcher_register(void)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = 10;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "archive_cluster");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "archive_cluster_launcher_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "archive_cluster launcher");
	snprintf(bgw.bgw_type, BGW_MAXLEN, "archive_cluster launcher");
	RegisterBackgroundWorker(&bgw);
}

/* A database the launcher may serve, as read from pg_database. */
typedef struct AcListedDatabase
{
	Oid			oid;			/* hash key */
	NameData	name;
	bool		tracked;		/* has an entry in the pool */
} AcListedDatabase;

/* The connectable, non-template, selected databases. */
static List *
ac_read_databases(void)
{
	List	   *result = NIL;
	MemoryContext cxt = CurrentMemoryContext;
	Relation	rel;
	TableScanDesc scan;
	HeapTuple	tup;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	PushActiveSnapshot(GetTransactionSnapshot());
	rel = table_open(DatabaseRelationId, AccessShareLock);
	scan = table_beginscan_catalog(rel, 0, NULL);
	while (HeapTupleIsValid(tup = heap_getnext(scan, ForwardScanDirection)))
	{
		Form_pg_database db = (Form_pg_database) GETSTRUCT(tup);
		AcListedDatabase *d;
		MemoryContext oldcxt;

		if (!db->datallowconn || db->datistemplate || database_is_invalid_form(db))
			continue;
		if (!ac_database_selected(NameStr(db->datname)))
			continue;
		oldcxt = MemoryContextSwitchTo(cxt);
		d = palloc(sizeof(AcListedDatabase));
		d->oid = db->oid;
		d->name = db->datname;
		result = lappend(result, d);
		MemoryContextSwitchTo(oldcxt);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	PopActiveSnapshot();
	CommitTransactionCommand();
	MemoryContextSwitchTo(cxt);
	return result;
}

/*
 * Bring the database entries in line with pg_database: new databases get
 * an entry, dropped or deselected ones lose theirs (and their worker).  In
 * time linear in the number of databases: the listed ones are looked up in
 * a hash table.
 */
static void
ac_refresh_databases(TimestampTz now)
{
	List	   *listed = ac_read_databases();
	ListCell   *lc;
	HASHCTL		ctl;
	HTAB	   *byoid;
	int			untracked = 0;
	int			i;

	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(AcListedDatabase);
	ctl.hcxt = CurrentMemoryContext;
	byoid = hash_create("archive_cluster databases", Max(list_length(listed), 16), &ctl,
						HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	foreach(lc, listed)
	{
		AcListedDatabase *d = lfirst(lc);
		AcListedDatabase *e = hash_search(byoid, &d->oid, HASH_ENTER, NULL);

		e->name = d->name;
		e->tracked = false;
	}

	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	for (i = 0; i < ac_pool->ndatabases; i++)
	{
		AcDatabaseEntry *db = &ac_pool->databases[i];
		AcListedDatabase *e;

		if (!OidIsValid(db->dboid))
			continue;
		e = hash_search(byoid, &db->dboid, HASH_FIND, NULL);
		db->listed = (e != NULL);
		if (e != NULL)
		{
			e->tracked = true;
			db->name = e->name;
		}
		else if (db->hold_until > now)
			continue;			/* being dropped or renamed */
		else if (db->slot < 0)
			db->dboid = InvalidOid;
		else if (ac_pool->slots[db->slot].pid != 0)
			kill(ac_pool->slots[db->slot].pid, SIGTERM);
	}
	foreach(lc, listed)
	{
		AcListedDatabase *e = hash_search(byoid, &((AcListedDatabase *) lfirst(lc))->oid,
										  HASH_FIND, NULL);
		AcDatabaseEntry *db;

		if (e->tracked)
			continue;
		db = ac_pool_add_database(e->oid);
		if (db == NULL && ac_pool_evict_database() != NULL)
			db = ac_pool_add_database(e->oid);
		if (db == NULL)
		{
			untracked++;
			continue;
		}
		db->name = e->name;
		db->listed = true;
	}
	LWLockRelease(ac_pool->lock);
	hash_destroy(byoid);

	if (untracked > 0 && now >= ac_last_full_log +
		(TimestampTz) archive_cluster_extension_recheck_interval * USECS_PER_SEC)
	{
		ereport(LOG,
				(errmsg_plural("archive_cluster serves no worker to %d database: archive_cluster.max_databases is %d",
							   "archive_cluster serves no worker to %d databases: archive_cluster.max_databases is %d",
							   untracked, untracked, archive_cluster_max_databases),
				 errhint("Raise archive_cluster.max_databases (needs a restart), or list the databases to serve in archive_cluster.databases.")));
		ac_last_full_log = now;
	}
}

/* Is slot i taken: by the pool, or by a worker process not yet gone? */
static bool
ac_slot_busy(int i)
{
	pid_t		pid;

	if (ac_pool->slots[i].state != AC_SLOT_FREE)
		return true;
	if (ac_handles[i] == NULL)
		return false;
	if (GetBackgroundWorkerPid(ac_handles[i], &pid) != BGWH_STOPPED)
		return true;
	pfree(ac_handles[i]);
	ac_handles[i] = NULL;
	return false;
}

/*
 * Free the slots whose worker has gone without freeing its slot (it failed
 * before attaching), and those that never attached.  Lock held.
 */
static void
ac_reap_slots(TimestampTz now)
{
	int			i;

	for (i = 0; i < ac_pool->nslots; i++)
	{
		AcWorkerSlot *s = &ac_pool->slots[i];
		AcDatabaseEntry *db;
		pid_t		pid;
		bool		gone;

		if (s->state == AC_SLOT_FREE)
			continue;
		if (ac_handles[i] != NULL)
			gone = GetBackgroundWorkerPid(ac_handles[i], &pid) == BGWH_STOPPED;
		else					/* started by a launcher before this one */
			gone = s->state == AC_SLOT_STARTING &&
				now >= TimestampTzPlusMilliseconds(s->launched_at, AC_STARTING_TIMEOUT_MS);
		if (!gone)
			continue;
		db = ac_pool_find_database(s->dboid);
		if (db != NULL)
		{
			db->slot = -1;
			db->last_ended = now;
			db->failed_starts++;	/* it never attached */
		}
		ac_pool_free_slot(i);
	}
}

/*
 * End the workers still at a job on a table (a batch, a compaction) well
 * after its archive_cluster.job_timeout: the cancel that the timeout asks
 * for did not end it (the table owner's code caught it, or does not check
 * for interrupts).  The slot goes to the next database when the worker has
 * gone.  The earliest time to look again, or 0.  Lock held.
 */
static TimestampTz
ac_end_overdue_workers(TimestampTz now)
{
	TimestampTz next = 0;
	int			i;

	for (i = 0; i < ac_pool->nslots; i++)
	{
		AcWorkerSlot *s = &ac_pool->slots[i];
		AcDatabaseEntry *db;
		TimestampTz end;

		if (s->state != AC_SLOT_RUNNING || s->pid == 0 || s->job_deadline == 0)
			continue;
		end = TimestampTzPlusMilliseconds(s->job_deadline, AC_JOB_GRACE_MS);
		if (now < end)
		{
			if (next == 0 || end < next)
				next = end;
			continue;
		}
		if (s->ended)
			continue;
		db = ac_pool_find_database(s->dboid);
		ereport(WARNING,
				(errmsg("terminating archive_cluster worker with PID %d: its job ran past archive_cluster.job_timeout",
						(int) s->pid),
				 errdetail("The worker of database \"%s\" did not end its job on the table with OID %u within %d s of its timeout.",
						   db != NULL ? NameStr(db->name) : "?", s->relid, AC_JOB_GRACE_MS / 1000)));
		kill(s->pid, SIGTERM);
		s->ended = true;
		/* the next worker of the database records the table's failure */
		if (db != NULL && OidIsValid(s->relid))
		{
			db->ended_relid = s->relid;
			db->ended_activity = s->activity;
			db->ended_at = now;
		}
	}
	return next;
}

/* The due database served longest ago, or NULL.  Lock held. */
static AcDatabaseEntry *
ac_next_database(TimestampTz now)
{
	AcDatabaseEntry *best = NULL;
	int			i;

	for (i = 0; i < ac_pool->ndatabases; i++)
	{
		AcDatabaseEntry *db = &ac_pool->databases[i];

		if (!OidIsValid(db->dboid) || !db->listed || db->slot >= 0 || ac_pool_due_at(db) > now)
			continue;
		if (best == NULL || db->last_started < best->last_started)
			best = db;
	}
	return best;
}

/*
 * Give a free slot to the due database served longest ago, or return -1
 * when there is no free slot or no due database.  Lock held.
 */
static int
ac_reserve_slot(TimestampTz now)
{
	AcDatabaseEntry *db = ac_next_database(now);
	AcWorkerSlot *s;
	int			i;

	if (db == NULL)
		return -1;
	for (i = 0; i < ac_pool->nslots; i++)
		if (!ac_slot_busy(i))
			break;
	if (i == ac_pool->nslots)
		return -1;
	s = &ac_pool->slots[i];
	s->state = AC_SLOT_STARTING;
	s->dboid = db->dboid;
	s->launched_at = now;
	s->activity = AC_ACT_STARTING;
	db->slot = i;
	db->last_started = now;
	db->worker_starts++;
	return i;
}

/*
 * Ask the postmaster for the worker of slot i (reserved), without the
 * pool's lock; on failure the slot is given up again.
 */
static bool
ac_start_worker(int i, TimestampTz now)
{
	AcWorkerSlot *s = &ac_pool->slots[i];
	BackgroundWorker bgw;
	MemoryContext oldcxt;
	AcDatabaseEntry *db;
	uint32		generation;
	bool		started;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "archive_cluster");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "archive_cluster_worker_main");
	LWLockAcquire(ac_pool->lock, LW_SHARED);
	generation = s->generation;
	db = ac_pool_find_database(s->dboid);
	snprintf(bgw.bgw_name, BGW_MAXLEN, "archive_cluster worker for database %s",
			 db != NULL ? NameStr(db->name) : "?");
	LWLockRelease(ac_pool->lock);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "archive_cluster worker");
	bgw.bgw_main_arg = Int32GetDatum(i);
	memcpy(bgw.bgw_extra, &generation, sizeof(uint32));
	bgw.bgw_notify_pid = MyProcPid;

	/* the handle outlives this tick */
	oldcxt = MemoryContextSwitchTo(TopMemoryContext);
	started = RegisterDynamicBackgroundWorker(&bgw, &ac_handles[i]);
	MemoryContextSwitchTo(oldcxt);
	if (started)
		return true;

	ac_handles[i] = NULL;
	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	if (s->generation == generation && s->state == AC_SLOT_STARTING)
	{
		db = ac_pool_find_database(s->dboid);
		if (db != NULL)
		{
			db->slot = -1;
			db->last_ended = now;
		}
		ac_pool_free_slot(i);
	}
	LWLockRelease(ac_pool->lock);
	return false;
}

/*
 * Start workers for the due databases while slots are free; the time to
 * sleep before the next look.
 */
static long
ac_launcher_tick(void)
{
	TimestampTz now = GetCurrentTimestamp();
	TimestampTz naptime = (TimestampTz) archive_cluster_naptime * USECS_PER_SEC;
	TimestampTz wake = now + naptime;
	int			busy = 0;
	int			max_workers = Min(archive_cluster_max_workers, ac_pool->nslots);
	int			waiting = 0;
	bool		postmaster_full = false;
	TimestampTz overdue;
	int			i;

	if (!archive_cluster_enabled)
		ac_enabled_since = 0;
	else if (ac_enabled_since == 0)
		ac_enabled_since = now;

	if (now >= ac_last_refresh + naptime || ac_last_refresh > now)
	{
		ac_refresh_databases(now);
		ac_last_refresh = now;
	}

	/* one worker at a time: reserve its slot under the lock, start it without */
	while (archive_cluster_enabled && !postmaster_full)
	{
		int			slot = -1;

		LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
		ac_reap_slots(now);
		busy = 0;
		for (i = 0; i < ac_pool->nslots; i++)
			if (ac_slot_busy(i))
				busy++;
		if (busy < max_workers)
			slot = ac_reserve_slot(now);
		LWLockRelease(ac_pool->lock);
		if (slot < 0)
			break;
		if (!ac_start_worker(slot, now))
			postmaster_full = true;
	}

	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	ac_reap_slots(now);
	overdue = ac_end_overdue_workers(now);
	if (overdue != 0)
		wake = Min(wake, overdue);
	/* what waits for a slot, and when the next database falls due */
	for (i = 0; i < ac_pool->ndatabases; i++)
	{
		AcDatabaseEntry *db = &ac_pool->databases[i];
		TimestampTz due;

		if (!OidIsValid(db->dboid) || !db->listed || db->slot >= 0)
			continue;
		due = ac_pool_due_at(db);
		/* waiting for a slot, not for archive_cluster.enabled */
		if (ac_enabled_since != 0 && Max(due, ac_enabled_since) + naptime <= now)
			waiting++;
		if (due > now)
			wake = Min(wake, due);
	}
	LWLockRelease(ac_pool->lock);

	if ((waiting > 0 || postmaster_full) && now >= ac_last_wait_log + naptime)
	{
		if (postmaster_full)
			ereport(LOG,
					(errmsg("archive_cluster could not start a worker: no background worker slot is free"),
					 errhint("Raise max_worker_processes, or lower archive_cluster.max_workers.")));
		else
			ereport(LOG,
					(errmsg_plural("archive_cluster: %d database has waited longer than archive_cluster.naptime for a worker",
								   "archive_cluster: %d databases have waited longer than archive_cluster.naptime for a worker",
								   waiting, waiting),
					 errhint("Raise archive_cluster.max_workers if this lasts.")));
		ac_last_wait_log = now;
	}

	/* worker exits wake the launcher up; otherwise the next due time */
	if (postmaster_full || !archive_cluster_enabled)
		return archive_cluster_naptime * 1000L;
	return Max((wake - now) / 1000, 100);
}

static void
ac_launcher_detach(int code, Datum arg)
{
	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	if (ac_pool->launcher_pid == MyProcPid)
		ac_pool->launcher_pid = 0;
	LWLockRelease(ac_pool->lock);
}

void
archive_cluster_launcher_main(Datum main_arg)
{
	MemoryContext tickcxt;
	uint32		wait_event;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	BackgroundWorkerInitializeConnection(NULL, NULL, 0);
	pgstat_report_appname("archive_cluster launcher");

	if (ac_pool == NULL)
		elog(ERROR, "archive_cluster must be loaded via shared_preload_libraries");
	ac_handles = MemoryContextAllocZero(TopMemoryContext,
										sizeof(BackgroundWorkerHandle *) * ac_pool->nslots);
	tickcxt = AllocSetContextCreate(TopMemoryContext, "archive_cluster launcher",
									ALLOCSET_DEFAULT_SIZES);
	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	ac_pool->launcher_pid = MyProcPid;
	LWLockRelease(ac_pool->lock);
	before_shmem_exit(ac_launcher_detach, (Datum) 0);

	wait_event = ac_wait_event("ArchiveClusterLauncherMain");
	ereport(LOG, (errmsg("archive_cluster launcher started")));

	for (;;)
	{
		long		sleep_ms;
		MemoryContext oldcxt;

		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
			ac_last_refresh = 0;	/* archive_cluster.databases may have changed */
		}

		oldcxt = MemoryContextSwitchTo(tickcxt);
		sleep_ms = ac_launcher_tick();
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(tickcxt);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 sleep_ms, wait_event);
		ResetLatch(MyLatch);
	}
}
