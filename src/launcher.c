/*-------------------------------------------------------------------------
 *
 * launcher.c
 *		The launcher: a background worker, started with the server when the
 *		library is preloaded, that keeps one worker (worker.c) running in
 *		every database where archive_cluster is installed.
 *
 *		The launcher connects to no database; each naptime it reads
 *		pg_database (a shared catalog) and starts a worker for each database
 *		that is selected (archive_cluster.databases), connectable and not a
 *		template, and has none.  A worker that finds no extension in its
 *		database exits at once, so a database is looked at again every
 *		naptime: a CREATE DATABASE or CREATE EXTENSION is noticed within
 *		one.  The shared state is one slot per database: the pid of its
 *		worker and the time before which no worker is started there again.
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
#include "storage/shmem.h"
#include "tcop/tcopprot.h"
#include "utils/memutils.h"
#include "utils/snapmgr.h"
#include "utils/timestamp.h"

#include "archive_cluster.h"
#include "compat.h"

PGDLLEXPORT void archive_cluster_launcher_main(Datum main_arg);

/* One database's worker. */
typedef struct AcWorkerSlot
{
	Oid			dboid;			/* InvalidOid: slot free */
	pid_t		pid;			/* the worker's pid while it runs, else 0 */
	TimestampTz hold_until;		/* start no worker here before this */
} AcWorkerSlot;

typedef struct AcShared
{
	LWLock	   *lock;
	pid_t		launcher_pid;
	int			nslots;
	AcWorkerSlot slots[FLEXIBLE_ARRAY_MEMBER];
} AcShared;

static AcShared *ac_shared = NULL;
static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* the launcher's handles of the workers it started, by slot */
static BackgroundWorkerHandle **ac_handles = NULL;

static Size
ac_shmem_size(void)
{
	return add_size(offsetof(AcShared, slots),
					mul_size(max_worker_processes, sizeof(AcWorkerSlot)));
}

static void
ac_shmem_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(ac_shmem_size());
	RequestNamedLWLockTranche("archive_cluster", 1);
}

static void
ac_shmem_startup(void)
{
	bool		found;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	ac_shared = ShmemInitStruct("archive_cluster", ac_shmem_size(), &found);
	if (!found)
	{
		memset(ac_shared, 0, ac_shmem_size());
		ac_shared->lock = &(GetNamedLWLockTranche("archive_cluster"))->lock;
		ac_shared->nslots = max_worker_processes;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Called from _PG_init() while preloading. */
void
ac_shmem_init_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ac_shmem_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ac_shmem_startup;
}

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

static AcWorkerSlot *
ac_find_slot(Oid dboid)
{
	int			i;

	for (i = 0; i < ac_shared->nslots; i++)
		if (ac_shared->slots[i].dboid == dboid)
			return &ac_shared->slots[i];
	return NULL;
}

/* ---- the worker's side ---- */

static void
ac_worker_detach(int code, Datum arg)
{
	AcWorkerSlot *slot;

	LWLockAcquire(ac_shared->lock, LW_EXCLUSIVE);
	slot = ac_find_slot(DatumGetObjectId(arg));
	if (slot != NULL && slot->pid == MyProcPid)
		slot->pid = 0;
	LWLockRelease(ac_shared->lock);
}

/*
 * A worker takes its database's slot; it exits at once if another worker
 * serves the database already.
 */
void
ac_worker_attach(Oid dboid)
{
	AcWorkerSlot *slot;
	bool		other = false;

	if (ac_shared == NULL)
		elog(ERROR, "archive_cluster must be loaded via shared_preload_libraries");

	LWLockAcquire(ac_shared->lock, LW_EXCLUSIVE);
	slot = ac_find_slot(dboid);
	if (slot == NULL)
		other = true;			/* the launcher gave this database up */
	else if (slot->pid != 0 && slot->pid != MyProcPid)
		other = true;
	else
		slot->pid = MyProcPid;
	LWLockRelease(ac_shared->lock);

	if (other)
		proc_exit(0);
	before_shmem_exit(ac_worker_detach, ObjectIdGetDatum(dboid));
}

/*
 * Stop the worker of a database, if any, and wait (up to 10 s) until it has
 * gone; no other is started there for the next 10 seconds.  For statements
 * that need a database without other sessions (DROP DATABASE ...).
 */
void
ac_stop_database_worker(Oid dboid)
{
	AcWorkerSlot *slot;
	pid_t		pid = 0;
	int			i;

	if (ac_shared == NULL)
		return;
	LWLockAcquire(ac_shared->lock, LW_EXCLUSIVE);
	slot = ac_find_slot(dboid);
	if (slot != NULL)
	{
		pid = slot->pid;
		slot->hold_until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 10000);
	}
	LWLockRelease(ac_shared->lock);
	if (pid == 0)
		return;

	kill(pid, SIGTERM);
	for (i = 0; i < 1000; i++)
	{
		bool		gone;

		LWLockAcquire(ac_shared->lock, LW_SHARED);
		slot = ac_find_slot(dboid);
		gone = slot == NULL || slot->pid != pid;
		LWLockRelease(ac_shared->lock);
		if (gone)
			return;
		CHECK_FOR_INTERRUPTS();
		pg_usleep(10000L);
	}
}

/* ---- the launcher ---- */

/* A database the launcher may serve. */
typedef struct AcDatabase
{
	Oid			oid;
	char		name[NAMEDATALEN];
} AcDatabase;

/* The connectable, non-template, selected databases. */
static List *
ac_database_list(MemoryContext mcxt)
{
	List	   *result = NIL;
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
		AcDatabase *d;
		MemoryContext oldcxt;

		if (!db->datallowconn || db->datistemplate || database_is_invalid_form(db))
			continue;
		if (!ac_database_selected(NameStr(db->datname)))
			continue;
		oldcxt = MemoryContextSwitchTo(mcxt);
		d = palloc(sizeof(AcDatabase));
		d->oid = db->oid;
		strlcpy(d->name, NameStr(db->datname), NAMEDATALEN);
		result = lappend(result, d);
		MemoryContextSwitchTo(oldcxt);
	}
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	PopActiveSnapshot();
	CommitTransactionCommand();
	return result;
}

/* Is the worker in slot i running or about to? */
static bool
ac_slot_busy(int i)
{
	pid_t		pid;
	BgwHandleStatus st;

	if (ac_shared->slots[i].pid != 0)
		return true;
	if (ac_handles[i] == NULL)
		return false;
	st = GetBackgroundWorkerPid(ac_handles[i], &pid);
	return st == BGWH_STARTED || st == BGWH_NOT_YET_STARTED;
}

static void
ac_start_worker(int i, AcDatabase *d)
{
	BackgroundWorker bgw;

	memset(&bgw, 0, sizeof(bgw));
	bgw.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	bgw.bgw_start_time = BgWorkerStart_RecoveryFinished;
	bgw.bgw_restart_time = BGW_NEVER_RESTART;
	snprintf(bgw.bgw_library_name, BGW_MAXLEN, "archive_cluster");
	snprintf(bgw.bgw_function_name, BGW_MAXLEN, "archive_cluster_worker_main");
	snprintf(bgw.bgw_name, BGW_MAXLEN, "archive_cluster worker for database %s", d->name);
	snprintf(bgw.bgw_type, BGW_MAXLEN, "archive_cluster worker");
	bgw.bgw_main_arg = ObjectIdGetDatum(d->oid);
	bgw.bgw_notify_pid = MyProcPid;

	if (ac_handles[i] != NULL)
		pfree(ac_handles[i]);
	ac_handles[i] = NULL;
	if (!RegisterDynamicBackgroundWorker(&bgw, &ac_handles[i]))
		ereport(WARNING,
				(errcode(ERRCODE_CONFIGURATION_LIMIT_EXCEEDED),
				 errmsg("archive_cluster could not start a worker for database \"%s\"",
						d->name),
				 errhint("Raise max_worker_processes.")));
}

/* One pass: a worker for each database that needs one, none for others. */
static void
ac_launcher_tick(MemoryContext tickcxt)
{
	List	   *dbs = ac_database_list(tickcxt);
	ListCell   *lc;
	TimestampTz now = GetCurrentTimestamp();
	int			i;

	LWLockAcquire(ac_shared->lock, LW_EXCLUSIVE);

	/* databases dropped or no longer selected: stop their workers */
	for (i = 0; i < ac_shared->nslots; i++)
	{
		AcWorkerSlot *slot = &ac_shared->slots[i];
		bool		listed = false;

		if (!OidIsValid(slot->dboid))
			continue;
		foreach(lc, dbs)
			if (((AcDatabase *) lfirst(lc))->oid == slot->dboid)
				listed = true;
		if (listed)
			continue;
		if (slot->pid != 0)
			kill(slot->pid, SIGTERM);
		else if (!ac_slot_busy(i))
			slot->dboid = InvalidOid;
	}

	foreach(lc, dbs)
	{
		AcDatabase *d = lfirst(lc);
		AcWorkerSlot *slot = ac_find_slot(d->oid);

		if (slot == NULL)
		{
			for (i = 0; i < ac_shared->nslots && slot == NULL; i++)
				if (!OidIsValid(ac_shared->slots[i].dboid) && !ac_slot_busy(i))
				{
					slot = &ac_shared->slots[i];
					memset(slot, 0, sizeof(AcWorkerSlot));
					slot->dboid = d->oid;
				}
			if (slot == NULL)
				continue;		/* more databases than worker processes */
		}
		i = slot - ac_shared->slots;
		if (!archive_cluster_enabled || ac_slot_busy(i) || slot->hold_until > now)
			continue;
		slot->hold_until = TimestampTzPlusMilliseconds(now, archive_cluster_naptime * 1000L);
		ac_start_worker(i, d);
	}

	LWLockRelease(ac_shared->lock);
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

	ac_handles = MemoryContextAllocZero(TopMemoryContext,
										sizeof(BackgroundWorkerHandle *) * ac_shared->nslots);
	tickcxt = AllocSetContextCreate(TopMemoryContext, "archive_cluster launcher",
									ALLOCSET_DEFAULT_SIZES);
	LWLockAcquire(ac_shared->lock, LW_EXCLUSIVE);
	ac_shared->launcher_pid = MyProcPid;
	LWLockRelease(ac_shared->lock);

	wait_event = ac_wait_event("ArchiveClusterLauncherMain");
	ereport(LOG, (errmsg("archive_cluster launcher started")));

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		ac_launcher_tick(tickcxt);
		MemoryContextReset(tickcxt);

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 archive_cluster_naptime * 1000L,
						 wait_event);
		ResetLatch(MyLatch);
	}
}
