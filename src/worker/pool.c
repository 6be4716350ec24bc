/*-------------------------------------------------------------------------
 *
 * pool.c
 *		The shared state of the worker pool (pool.h): its shared memory, and
 *		what workers and other sessions do to it.
 *
 *		The launcher (launcher.c) owns the scheduling: it adds and removes
 *		database entries and hands free slots to databases.  A worker
 *		(worker.c) attaches to the slot it was started for, says what it is
 *		doing, and leaves its results in its database's entry when it
 *		exits.  Other sessions stop a database's worker before DROP DATABASE
 *		and the like (utility.c), and tell the launcher about a new CREATE
 *		EXTENSION so that it looks at that database again at once.
 *
 *		Every field is read and written under the pool's one LWLock.  A
 *		slot's generation changes each time it is freed, so that a worker
 *		that attaches late (its slot given up and reused meanwhile) finds
 *		out and exits.  Shared memory is initialised again after a crash:
 *		the workers then look at every table once more (stats_trusted),
 *		since the cumulative statistics they rely on may have been reset.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <signal.h>

#include "miscadmin.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "utils/wait_event.h"
#include "storage/shmem.h"
#include "utils/timestamp.h"

#include "base/guc.h"
#include "worker/pool.h"

AcPool	   *ac_pool = NULL;

static shmem_request_hook_type prev_shmem_request_hook = NULL;
static shmem_startup_hook_type prev_shmem_startup_hook = NULL;

/* this worker's slot (worker.c) */
static int	ac_my_slot = -1;
static uint32 ac_my_generation = 0;

static Size
ac_pool_size(void)
{
	Size		size = MAXALIGN(sizeof(AcPool));

	size = add_size(size, MAXALIGN(mul_size(max_worker_processes, sizeof(AcWorkerSlot))));
	return add_size(size, mul_size(archive_cluster_max_databases, sizeof(AcDatabaseEntry)));
}

static void
ac_pool_request(void)
{
	if (prev_shmem_request_hook)
		prev_shmem_request_hook();
	RequestAddinShmemSpace(ac_pool_size());
	RequestNamedLWLockTranche("archive_cluster", 1);
}

static void
ac_pool_startup(void)
{
	bool		found;
	char	   *base;

	if (prev_shmem_startup_hook)
		prev_shmem_startup_hook();

	LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
	base = ShmemInitStruct("archive_cluster", ac_pool_size(), &found);
	ac_pool = (AcPool *) base;
	if (!found)
		memset(base, 0, ac_pool_size());
	/* pointers into shared memory, set in each process (EXEC_BACKEND) */
	ac_pool->slots = (AcWorkerSlot *) (base + MAXALIGN(sizeof(AcPool)));
	ac_pool->databases = (AcDatabaseEntry *)
		((char *) ac_pool->slots +
		 MAXALIGN(mul_size(max_worker_processes, sizeof(AcWorkerSlot))));
	if (!found)
	{
		int			i;

		ac_pool->lock = &(GetNamedLWLockTranche("archive_cluster"))->lock;
		ac_pool->nslots = max_worker_processes;
		ac_pool->ndatabases = archive_cluster_max_databases;
		for (i = 0; i < ac_pool->ndatabases; i++)
			ac_pool->databases[i].slot = -1;
	}
	LWLockRelease(AddinShmemInitLock);
}

/* Called from _PG_init() while preloading. */
void
ac_pool_init_hooks(void)
{
	prev_shmem_request_hook = shmem_request_hook;
	shmem_request_hook = ac_pool_request;
	prev_shmem_startup_hook = shmem_startup_hook;
	shmem_startup_hook = ac_pool_startup;
}

/* The entry of a database, or NULL.  Caller holds the lock. */
AcDatabaseEntry *
ac_pool_find_database(Oid dboid)
{
	int			i;

	for (i = 0; i < ac_pool->ndatabases; i++)
		if (ac_pool->databases[i].dboid == dboid)
			return &ac_pool->databases[i];
	return NULL;
}

/* A new entry for a database, or NULL when all are taken.  Lock held. */
AcDatabaseEntry *
ac_pool_add_database(Oid dboid)
{
	int			i;

	for (i = 0; i < ac_pool->ndatabases; i++)
	{
		AcDatabaseEntry *db = &ac_pool->databases[i];

		if (!OidIsValid(db->dboid))
		{
			memset(db, 0, sizeof(AcDatabaseEntry));
			db->dboid = dboid;
			db->state = AC_DB_UNKNOWN;
			db->slot = -1;
			db->added_at = GetCurrentTimestamp();
			return db;
		}
	}
	return NULL;
}

/*
 * Make room for a database when every entry is taken: the entry of a
 * database without the extension, not being served, looked at most
 * recently (it needs a look least soon); NULL when there is none.  Lock held.
 */
AcDatabaseEntry *
ac_pool_evict_database(void)
{
	AcDatabaseEntry *victim = NULL;
	int			i;

	for (i = 0; i < ac_pool->ndatabases; i++)
	{
		AcDatabaseEntry *db = &ac_pool->databases[i];

		if (db->state != AC_DB_ABSENT || db->slot >= 0)
			continue;
		if (victim == NULL || db->next_check > victim->next_check)
			victim = db;
	}
	if (victim != NULL)
		victim->dboid = InvalidOid;
	return victim;
}

/* Free a slot; a worker still to attach to it will not.  Lock held. */
void
ac_pool_free_slot(int slot)
{
	AcWorkerSlot *s = &ac_pool->slots[slot];
	uint32		generation = s->generation + 1;

	memset(s, 0, sizeof(AcWorkerSlot));
	s->generation = generation;
}

/*
 * When a database not being served is due for its next worker (in the
 * past: at once).  Lock held, or a copy of the entry.
 */
TimestampTz
ac_pool_due_at(AcDatabaseEntry *db)
{
	TimestampTz naptime = (TimestampTz) archive_cluster_naptime * USECS_PER_SEC;
	TimestampTz due;

	/* workers that failed before saying anything (cannot connect...): wait longer each time */
	if (db->failed_starts > 0)
		return Max(db->last_ended + Min(naptime << Min(db->failed_starts, 12),
										(TimestampTz) 3600 * USECS_PER_SEC),
				   db->hold_until);
	switch (db->state)
	{
		case AC_DB_INSTALLED:
			due = db->more_work ? db->last_ended : db->last_ended + naptime;
			break;
		case AC_DB_ABSENT:
			due = db->next_check;
			break;
		default:
			/* told to look (CREATE EXTENSION), or a failed look retried */
			if (db->last_started == 0)
				due = db->added_at;
			else if (db->next_check > db->last_started)
				due = db->next_check;
			else
				due = db->last_ended + naptime;
			break;
	}
	return Max(Max(due, db->added_at), db->hold_until);
}

/* Wake the launcher up (its latch), if it runs. */
void
ac_pool_wake_launcher(void)
{
	/* under the lock: the launcher clears its pid under it before it exits */
	LWLockAcquire(ac_pool->lock, LW_SHARED);
	if (ac_pool->launcher_pid != 0)
		kill(ac_pool->launcher_pid, SIGUSR1);
	LWLockRelease(ac_pool->lock);
}

/* ---- the worker's side ---- */

/* On exit: the slot is free again, the launcher told. */
static void
ac_pool_worker_detach(int code, Datum arg)
{
	AcWorkerSlot *s = &ac_pool->slots[ac_my_slot];

	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	if (s->generation == ac_my_generation && s->pid == MyProcPid)
	{
		AcDatabaseEntry *db = ac_pool_find_database(s->dboid);

		if (db != NULL)
		{
			db->last_ended = GetCurrentTimestamp();
			db->slot = -1;
			/* ended by the launcher in a job: the table's failure, not the database's */
			if (!db->reported && !s->ended)
				db->failed_starts++;
		}
		ac_pool_free_slot(ac_my_slot);
	}
	LWLockRelease(ac_pool->lock);
	ac_pool_wake_launcher();
}

/*
 * Take the slot the launcher started this worker for; the database to
 * serve, or InvalidOid when the slot was given up meanwhile or the
 * database is held (ac_pool_stop_database_worker): then exit.
 */
Oid
ac_pool_worker_attach(int slot, uint32 generation, bool *stats_trusted)
{
	AcWorkerSlot *s;
	AcDatabaseEntry *db;
	TimestampTz now = GetCurrentTimestamp();
	Oid			dboid = InvalidOid;

	if (ac_pool == NULL || slot < 0 || slot >= ac_pool->nslots)
		elog(ERROR, "archive_cluster must be loaded via shared_preload_libraries");

	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	s = &ac_pool->slots[slot];
	if (s->state == AC_SLOT_STARTING && s->generation == generation)
	{
		db = ac_pool_find_database(s->dboid);
		if (db != NULL && db->listed && db->hold_until <= now)
		{
			/* set again when this worker reports (ac_pool_worker_done) */
			db->more_work = false;
			db->reported = false;
			s->state = AC_SLOT_RUNNING;
			s->pid = MyProcPid;
			s->started_at = now;
			s->activity = AC_ACT_CHECKING;
			*stats_trusted = db->stats_trusted;
			dboid = s->dboid;
		}
		else
		{
			if (db != NULL)
				db->slot = -1;
			ac_pool_free_slot(slot);
		}
	}
	LWLockRelease(ac_pool->lock);

	if (OidIsValid(dboid))
	{
		ac_my_slot = slot;
		ac_my_generation = generation;
		before_shmem_exit(ac_pool_worker_detach, (Datum) 0);
	}
	return dboid;
}

/* What this worker does now: for archive_cluster_workers. */
void
ac_pool_worker_activity(AcActivity activity, Oid relid)
{
	AcWorkerSlot *s = &ac_pool->slots[ac_my_slot];

	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	if (s->generation == ac_my_generation && s->pid == MyProcPid)
	{
		s->activity = activity;
		s->relid = relid;
	}
	LWLockRelease(ac_pool->lock);
}

/*
 * Whether a lagging standby or subscriber stopped a worker, as seen now:
 * true when this is the first such stop since the lag was last within its
 * bound, the one that the log tells (one line per episode, not per table).
 */
bool
ac_pool_lag_episode(bool lagging)
{
	bool		first;

	/* the usual case, no lag and none told: an unlocked look is enough */
	if (!lagging && !ac_pool->lag_told)
		return false;
	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	first = lagging && !ac_pool->lag_told;
	ac_pool->lag_told = lagging;
	LWLockRelease(ac_pool->lock);
	return first;
}

/*
 * When this worker's job on a table (a batch, a compaction) must be over,
 * archive_cluster.job_timeout after it started; 0 between jobs.  The
 * launcher ends a worker that is still at it well past that.
 */
void
ac_pool_worker_job(TimestampTz deadline)
{
	AcWorkerSlot *s = &ac_pool->slots[ac_my_slot];

	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	if (s->generation == ac_my_generation && s->pid == MyProcPid)
		s->job_deadline = deadline;
	LWLockRelease(ac_pool->lock);
}

/*
 * The job in which the launcher ended this database's previous worker
 * (ac_end_overdue_workers), taken once: the new worker records it as that
 * table's failure, since the ended one could not.
 */
bool
ac_pool_worker_take_ended(Oid *relid, AcActivity *activity, TimestampTz *at)
{
	AcWorkerSlot *s = &ac_pool->slots[ac_my_slot];
	bool		found = false;

	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	if (s->generation == ac_my_generation && s->pid == MyProcPid)
	{
		AcDatabaseEntry *db = ac_pool_find_database(s->dboid);

		if (db != NULL && OidIsValid(db->ended_relid))
		{
			*relid = db->ended_relid;
			*activity = db->ended_activity;
			*at = db->ended_at;
			db->ended_relid = InvalidOid;
			found = true;
		}
	}
	LWLockRelease(ac_pool->lock);
	return found;
}

/*
 * The worker's findings, for the launcher's next choices: whether the
 * extension is installed, whether due work is left (the time slice ran
 * out), whether it looked at every table.
 */
void
ac_pool_worker_done(AcDbState found, bool more_work, bool looked_at_all)
{
	AcWorkerSlot *s = &ac_pool->slots[ac_my_slot];

	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	if (s->generation == ac_my_generation && s->pid == MyProcPid)
	{
		AcDatabaseEntry *db = ac_pool_find_database(s->dboid);

		if (db != NULL)
		{
			/* a CREATE EXTENSION after this worker looked: look again */
			if (!(found == AC_DB_ABSENT && db->state == AC_DB_UNKNOWN &&
				  db->last_started < db->next_check))
			{
				db->state = found;
				if (found == AC_DB_ABSENT)
					db->next_check = TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
																 archive_cluster_extension_recheck_interval * 1000L);
			}
			db->more_work = more_work;
			if (looked_at_all)
				db->stats_trusted = true;
			db->reported = true;
			db->failed_starts = 0;
		}
	}
	LWLockRelease(ac_pool->lock);
}

/* ---- other sessions ---- */

/*
 * Stop the worker of a database, if any, and wait (up to 10 s) until it has
 * gone; no other is started there for the next 10 seconds.  For statements
 * that need a database without other sessions (DROP DATABASE ...).
 */
void
ac_pool_stop_database_worker(Oid dboid)
{
	AcDatabaseEntry *db;
	int			i;

	if (ac_pool == NULL)
		return;
	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	db = ac_pool_find_database(dboid);
	if (db == NULL)
		db = ac_pool_add_database(dboid);
	if (db != NULL)
	{
		db->hold_until = TimestampTzPlusMilliseconds(GetCurrentTimestamp(), 10000);
		/* no worker until the launcher has seen the database again */
		db->listed = false;
	}
	LWLockRelease(ac_pool->lock);

	for (i = 0; i < 1000; i++)
	{
		bool		serving = false;
		int			j;

		LWLockAcquire(ac_pool->lock, LW_SHARED);
		for (j = 0; j < ac_pool->nslots; j++)
		{
			AcWorkerSlot *s = &ac_pool->slots[j];

			if (s->state == AC_SLOT_FREE || s->dboid != dboid)
				continue;
			serving = true;
			/* a worker still starting sees the hold and exits by itself */
			if (s->pid != 0 && i % 50 == 0)
				kill(s->pid, SIGTERM);
		}
		LWLockRelease(ac_pool->lock);
		if (!serving)
			return;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH, 10,
						 PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * CREATE EXTENSION archive_cluster committed in this database: the launcher
 * looks at it again now rather than at its next periodic check.
 */
void
ac_pool_extension_created(Oid dboid)
{
	AcDatabaseEntry *db;

	if (ac_pool == NULL)
		return;
	LWLockAcquire(ac_pool->lock, LW_EXCLUSIVE);
	db = ac_pool_find_database(dboid);
	if (db != NULL && db->state != AC_DB_INSTALLED)
	{
		db->state = AC_DB_UNKNOWN;
		db->next_check = GetCurrentTimestamp();
		db->failed_starts = 0;
	}
	LWLockRelease(ac_pool->lock);
	ac_pool_wake_launcher();
}
