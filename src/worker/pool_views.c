/*-------------------------------------------------------------------------
 *
 * pool_views.c
 *		archive_cluster_workers() and archive_cluster_databases(): the worker
 *		pool's shared state (pool.h) as rows, for the views of the same
 *		names.  The state is copied under the pool's lock, then turned into
 *		rows without it.  Without the library preloaded there is no pool and
 *		no row.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "fmgr.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "base/guc.h"
#include "worker/pool.h"

PG_FUNCTION_INFO_V1(archive_cluster_pool_workers);
PG_FUNCTION_INFO_V1(archive_cluster_pool_databases);

static const char *const ac_activity_names[] = {
	[AC_ACT_STARTING] = "starting",
	[AC_ACT_CHECKING] = "checking",
	[AC_ACT_ARCHIVING] = "archiving",
	[AC_ACT_COMPACTING] = "compacting",
	[AC_ACT_VACUUMING] = "vacuuming",
	[AC_ACT_REBUILDING] = "rebuilding an index"
};

static const char *const ac_db_state_names[] = {
	[AC_DB_UNKNOWN] = "unknown",
	[AC_DB_INSTALLED] = "installed",
	[AC_DB_ABSENT] = "absent"
};

static Datum
ac_time_or_null(TimestampTz t, bool *isnull)
{
	*isnull = (t == 0);
	return TimestampTzGetDatum(t);
}

/*
 * archive_cluster_workers(): one row per worker slot in use: the slot, the
 * worker's pid (NULL while it starts), its database, when the launcher asked
 * for it and when it started, what it does and on which table.
 */
Datum
archive_cluster_pool_workers(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	AcWorkerSlot *slots;
	int			nslots;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	if (ac_pool == NULL)
		return (Datum) 0;

	nslots = ac_pool->nslots;
	slots = palloc(sizeof(AcWorkerSlot) * nslots);
	LWLockAcquire(ac_pool->lock, LW_SHARED);
	memcpy(slots, ac_pool->slots, sizeof(AcWorkerSlot) * nslots);
	LWLockRelease(ac_pool->lock);

	for (i = 0; i < nslots; i++)
	{
		AcWorkerSlot *s = &slots[i];
		Datum		values[7];
		bool		nulls[7] = {false};

		if (s->state == AC_SLOT_FREE)
			continue;
		values[0] = Int32GetDatum(i);
		values[1] = Int32GetDatum(s->pid);
		nulls[1] = (s->pid == 0);
		values[2] = ObjectIdGetDatum(s->dboid);
		values[3] = ac_time_or_null(s->launched_at, &nulls[3]);
		values[4] = ac_time_or_null(s->started_at, &nulls[4]);
		values[5] = CStringGetTextDatum(ac_activity_names[s->activity]);
		values[6] = ObjectIdGetDatum(s->relid);
		nulls[6] = !OidIsValid(s->relid);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	pfree(slots);
	return (Datum) 0;
}

/*
 * archive_cluster_databases(): one row per database the launcher serves:
 * whether the extension is installed there, the slot serving it, when it
 * last got a worker and when that ended, how many it got, whether work was
 * left, and when the next worker is due (in the past: it waits for a slot).
 */
Datum
archive_cluster_pool_databases(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	AcDatabaseEntry *dbs;
	int			ndbs;
	int			i;

	InitMaterializedSRF(fcinfo, 0);
	if (ac_pool == NULL)
		return (Datum) 0;

	ndbs = ac_pool->ndatabases;
	dbs = palloc(sizeof(AcDatabaseEntry) * ndbs);
	LWLockAcquire(ac_pool->lock, LW_SHARED);
	memcpy(dbs, ac_pool->databases, sizeof(AcDatabaseEntry) * ndbs);
	LWLockRelease(ac_pool->lock);

	for (i = 0; i < ndbs; i++)
	{
		AcDatabaseEntry *db = &dbs[i];
		Datum		values[8];
		bool		nulls[8] = {false};

		if (!OidIsValid(db->dboid) || !db->listed)
			continue;
		values[0] = ObjectIdGetDatum(db->dboid);
		values[1] = CStringGetTextDatum(ac_db_state_names[db->state]);
		values[2] = Int32GetDatum(db->slot);
		nulls[2] = (db->slot < 0);
		values[3] = ac_time_or_null(db->last_started, &nulls[3]);
		values[4] = ac_time_or_null(db->last_ended, &nulls[4]);
		nulls[4] = nulls[4] || db->last_ended < db->last_started;
		values[5] = Int64GetDatum(db->worker_starts);
		values[6] = BoolGetDatum(db->more_work);
		values[7] = TimestampTzGetDatum(ac_pool_due_at(db));
		nulls[7] = (db->slot >= 0);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	pfree(dbs);
	return (Datum) 0;
}
