/*-------------------------------------------------------------------------
 *
 * pool.h
 *		The shared state of archive_cluster's background workers: one entry
 *		per database the launcher knows, one slot per worker it may run.
 *
 *-------------------------------------------------------------------------
 */
#ifndef AC_POOL_H
#define AC_POOL_H

#include "datatype/timestamp.h"
#include "storage/lwlock.h"

/* Is the extension installed in a database? */
typedef enum AcDbState
{
	AC_DB_UNKNOWN = 0,			/* not looked at yet, or told to look again */
	AC_DB_INSTALLED,
	AC_DB_ABSENT
} AcDbState;

/* What a worker is doing, for archive_cluster_workers. */
typedef enum AcActivity
{
	AC_ACT_STARTING = 0,
	AC_ACT_CHECKING,
	AC_ACT_ARCHIVING,
	AC_ACT_COMPACTING,
	AC_ACT_VACUUMING,
	AC_ACT_REBUILDING
} AcActivity;

/* One database the launcher serves. */
typedef struct AcDatabaseEntry
{
	Oid			dboid;			/* InvalidOid: entry free */
	NameData	name;
	AcDbState	state;
	bool		listed;			/* the launcher's mark while it reads pg_database */
	bool		more_work;		/* its last worker stopped with due work left */
	bool		stats_trusted;	/* a worker looked at every table since start-up */
	bool		reported;		/* its current worker said what it found */
	int			failed_starts;	/* workers in a row that ended before reporting */
	int			slot;			/* the slot serving it, -1: none */
	TimestampTz added_at;		/* when the launcher first saw it */
	TimestampTz last_started;	/* when it last got a worker, 0: never */
	TimestampTz last_ended;		/* when that worker ended */
	TimestampTz next_check;		/* AC_DB_ABSENT: when to look again */
	TimestampTz hold_until;		/* start no worker here before this */
	int64		worker_starts;
	/* a worker the launcher ended in a job (ac_pool_worker_take_ended) */
	Oid			ended_relid;	/* its table, InvalidOid: none to record */
	AcActivity	ended_activity;	/* what it was doing */
	TimestampTz ended_at;
} AcDatabaseEntry;

typedef enum AcSlotState
{
	AC_SLOT_FREE = 0,
	AC_SLOT_STARTING,			/* asked of the postmaster, not attached yet */
	AC_SLOT_RUNNING
} AcSlotState;


/* One worker of the pool. */
typedef struct AcWorkerSlot
{
	AcSlotState state;
	uint32		generation;		/* changes whenever the slot is freed */
	Oid			dboid;
	pid_t		pid;			/* 0 until the worker attached */
	TimestampTz launched_at;	/* asked of the postmaster */
	TimestampTz started_at;		/* attached */
	AcActivity	activity;
	Oid			relid;			/* the table it works on, or InvalidOid */
	TimestampTz job_deadline;	/* its job's archive_cluster.job_timeout, 0: none */
	bool		ended;			/* the launcher ended it (ac_end_overdue_workers) */
} AcWorkerSlot;

typedef struct AcPool
{
	LWLock	   *lock;
	pid_t		launcher_pid;
	int			nslots;			/* max_worker_processes */
	int			ndatabases;		/* archive_cluster.max_databases */
	bool		lag_told;		/* a worker logged that a replica lags */
	AcWorkerSlot *slots;
	AcDatabaseEntry *databases;
} AcPool;

/* NULL unless the library was preloaded */
extern AcPool *ac_pool;

extern void ac_pool_init_hooks(void);
extern AcDatabaseEntry *ac_pool_find_database(Oid dboid);
extern AcDatabaseEntry *ac_pool_add_database(Oid dboid);
extern AcDatabaseEntry *ac_pool_evict_database(void);
extern void ac_pool_free_slot(int slot);
extern TimestampTz ac_pool_due_at(AcDatabaseEntry *db);
extern void ac_pool_wake_launcher(void);

/* the worker's side */
extern Oid	ac_pool_worker_attach(int slot, uint32 generation, bool *stats_trusted);
extern void ac_pool_worker_activity(AcActivity activity, Oid relid);
extern void ac_pool_worker_job(TimestampTz deadline);
extern bool ac_pool_worker_take_ended(Oid *relid, AcActivity *activity, TimestampTz *at);
extern void ac_pool_worker_done(AcDbState found, bool more_work, bool looked_at_all);
extern bool ac_pool_lag_episode(bool lagging);

/* other sessions */
extern void ac_pool_stop_database_worker(Oid dboid);
extern void ac_pool_extension_created(Oid dboid);

#endif							/* AC_POOL_H */
