/*-------------------------------------------------------------------------
 *
 * config.c
 *		Reading and writing archive_cluster's own tables: the registered
 *		tables (archive_cluster_config) and the run history
 *		(archive_cluster_run_log).  The readers of the configuration
 *		(ac_load_config, ac_registered_relations) connect to SPI themselves
 *		and return memory of the caller's context; the other functions
 *		expect the caller to be connected.
 *
 *		Everyone may read the configuration; writes run as the extension's
 *		owner, with fixed, schema-qualified statements, after the caller's
 *		rights on the table concerned have been checked.
 *
 *		The configuration is read like a catalog: with the latest snapshot,
 *		not the statement's.  A statement whose snapshot predates a
 *		registration (a REPEATABLE READ transaction, a COPY that waited for
 *		the registering transaction) reaches the new view and must find the
 *		registration; a run that waited for an unregistration must see it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "mb/pg_wchar.h"
#include "miscadmin.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"

#include "archive_cluster.h"
#include "base/guc.h"
#include "base/util.h"
#include "registry/config.h"

#define AC_EXTENSION_NAME "archive_cluster"

/*
 * The schema the extension lives in; error if it is not installed in this
 * database.
 */
Oid
ac_extension_schema(void)
{
	bool		isnull;

	if (SPI_execute("SELECT extnamespace FROM pg_catalog.pg_extension"
					" WHERE extname OPERATOR(pg_catalog.=) '" AC_EXTENSION_NAME "'",
					true, 1) != SPI_OK_SELECT)
		elog(ERROR, "could not read pg_extension");
	if (SPI_processed != 1)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("extension \"%s\" is not installed in this database",
						AC_EXTENSION_NAME),
				 errhint("Run CREATE EXTENSION archive_cluster.")));
	return DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull));
}

/* "schema".name of one of the extension's objects, palloc'd */
char *
ac_extension_object(const char *name)
{
	return quote_qualified_identifier(get_namespace_name(ac_extension_schema()),
									  name);
}

Oid
ac_extension_owner(void)
{
	Oid			owner;
	bool		isnull;
	int			rc;

	rc = SPI_execute("SELECT extowner FROM pg_catalog.pg_extension"
					 " WHERE extname OPERATOR(pg_catalog.=) '" AC_EXTENSION_NAME "'",
					 true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "could not find the owner of extension %s", AC_EXTENSION_NAME);
	owner = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										   SPI_tuptable->tupdesc, 1, &isnull));
	return owner;
}

/*
 * Run a fixed statement on the extension's own tables as the extension's
 * owner.  Returns SPI_processed.
 */
uint64
ac_exec_as_extension_owner(const char *sql, int nargs, Oid *argtypes,
						   Datum *values, const char *nulls, int expected)
{
	Oid			save_userid;
	int			save_sec_context;
	int			rc;

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(ac_extension_owner(),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	rc = SPI_execute_with_args(sql, nargs, argtypes, values, nulls, false, 0);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	if (rc != expected)
		elog(ERROR, "SPI_execute_with_args returned %s for \"%s\"",
			 SPI_result_code_string(rc), sql);
	return SPI_processed;
}

/*
 * Run a read-only query on the configuration with the latest snapshot.
 * Returns SPI_processed.
 */
static uint64
ac_config_query(const char *sql, int nargs, Oid *argtypes, Datum *values, long limit)
{
	int			rc;

	PushActiveSnapshot(GetLatestSnapshot());
	rc = SPI_execute_with_args(sql, nargs, argtypes, values, NULL, true, limit);
	PopActiveSnapshot();
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "could not read archive_cluster_config");
	return SPI_processed;
}

/*
 * Load the configuration of the registered view "relation" into *cfg.
 * Returns false when it is not registered.
 *
 * This is the one way to read a configuration.  It connects to SPI itself
 * and allocates everything it returns in the memory context current at the
 * call, so the result outlives the SPI connection it was read with: call it
 * before connecting to SPI (or while connected, to use the result only
 * until SPI_finish, like anything else palloc'd then).
 */
bool
ac_load_config(Oid relation, AcTableConfig *cfg)
{
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext oldcxt;
	char	   *sql;
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	HeapTuple	tup;
	TupleDesc	desc;
	bool		isnull;
	Datum	   *elems;
	int			nelems;
	Datum		d;
	bool		found;
	int			i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	sql = psprintf("SELECT current_table, archive_table, cluster_by, age_column,"
				   " hot_window, batch_rows, mode OPERATOR(pg_catalog.=) 'table',"
				   " (pg_catalog.date_part('epoch', lock_timeout) OPERATOR(pg_catalog.*) 1000)::pg_catalog.int4 FROM %s"
				   " WHERE relation OPERATOR(pg_catalog.=) $1",
				   ac_extension_object("archive_cluster_config"));
	values[0] = ObjectIdGetDatum(relation);
	found = ac_config_query(sql, 1, argtypes, values, 1) > 0;
	if (found)
	{
		tup = SPI_tuptable->vals[0];
		desc = SPI_tuptable->tupdesc;
		oldcxt = MemoryContextSwitchTo(caller);

		memset(cfg, 0, sizeof(*cfg));
		cfg->relation = relation;
		cfg->current = DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull));
		cfg->archive = DatumGetObjectId(SPI_getbinval(tup, desc, 2, &isnull));

		d = SPI_getbinval(tup, desc, 3, &isnull);
		deconstruct_array(DatumGetArrayTypeP(d), NAMEOID, NAMEDATALEN, false,
						  TYPALIGN_CHAR, &elems, NULL, &nelems);
		if (nelems < 1 || nelems > AC_MAX_CLUSTER_COLS)
			elog(ERROR, "invalid cluster_by in archive_cluster_config");
		cfg->ncluster = nelems;
		for (i = 0; i < nelems; i++)
			cfg->cluster_by[i] = pstrdup(NameStr(*DatumGetName(elems[i])));

		d = SPI_getbinval(tup, desc, 4, &isnull);
		cfg->age_column = pstrdup(NameStr(*DatumGetName(d)));
		d = SPI_getbinval(tup, desc, 5, &isnull);
		cfg->hot_window = *DatumGetIntervalP(d);
		d = SPI_getbinval(tup, desc, 6, &isnull);
		cfg->batch_rows = isnull ? 0 : DatumGetInt64(d);
		cfg->table_mode = DatumGetBool(SPI_getbinval(tup, desc, 7, &isnull));
		d = SPI_getbinval(tup, desc, 8, &isnull);
		cfg->lock_timeout_ms = isnull ? 0 : DatumGetInt32(d);

		MemoryContextSwitchTo(oldcxt);
	}
	SPI_finish();
	return found;
}

/*
 * ac_load_config, or the error of a relation that is not registered, with
 * a hint naming the view when relid is one of its tables.
 */
void
ac_load_config_or_error(Oid relid, AcTableConfig *cfg)
{
	Oid			viewid;

	if (ac_load_config(relid, cfg))
		return;
	viewid = ac_registered_view_of(relid);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("relation \"%s\" is not registered with archive_cluster",
					get_rel_name(relid)),
			 OidIsValid(viewid) ?
			 errhint("Pass the registered view \"%s\" instead.", get_rel_name(viewid)) :
			 errhint("Register it first with archive_cluster_register().")));
}

/*
 * OIDs of all registered views, in registration order, in a list allocated
 * in the caller's memory context (see ac_load_config).
 */
List *
ac_registered_relations(void)
{
	MemoryContext caller = CurrentMemoryContext;
	List	   *result = NIL;
	char	   *sql;
	uint64		i;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	sql = psprintf("SELECT relation FROM %s ORDER BY registered_at, relation::pg_catalog.oid",
				   ac_extension_object("archive_cluster_config"));
	(void) ac_config_query(sql, 0, NULL, NULL, 0);
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		Oid			relation;
		MemoryContext oldcxt;

		relation = DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[i],
												  SPI_tuptable->tupdesc,
												  1, &isnull));
		oldcxt = MemoryContextSwitchTo(caller);
		result = lappend_oid(result, relation);
		MemoryContextSwitchTo(oldcxt);
	}
	SPI_finish();
	return result;
}

/*
 * If relid is a registered view, or the current or archive table of one,
 * return the view's OID; else InvalidOid.
 */
Oid
ac_registered_view_of(Oid relid)
{
	char	   *sql;
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	bool		isnull;

	sql = psprintf("SELECT relation FROM %s WHERE $1 OPERATOR(pg_catalog.=) relation"
				   " OR $1 OPERATOR(pg_catalog.=) current_table"
				   " OR $1 OPERATOR(pg_catalog.=) archive_table",
				   ac_extension_object("archive_cluster_config"));
	values[0] = ObjectIdGetDatum(relid);
	if (ac_config_query(sql, 1, argtypes, values, 1) == 0)
		return InvalidOid;
	return DatumGetObjectId(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull));
}

/* error text kept in archive_cluster_run_log at most, in bytes */
#define AC_LOG_ERROR_MAX 1000

/*
 * Record one run in archive_cluster_run_log, and keep only the newest
 * archive_cluster.run_log_max_rows rows of that table, and as many of all
 * tables no longer registered together: whoever may run a table can fill
 * only its share (registering and unregistering again and again included),
 * and the log stays bounded.
 */
/* a text of the run log, clipped to AC_LOG_ERROR_MAX bytes; NULL stays */
static void
ac_log_text(const char *text, Datum *value, char *null)
{
	if (text)
		*value = CStringGetTextDatum(pnstrdup(text, pg_mbcliplen(text, strlen(text),
																 AC_LOG_ERROR_MAX)));
	else
		*null = 'n';
}

void
ac_log_run(const AcRunLog *log)
{
	char	   *sql;
	Oid			argtypes[17] = {REGCLASSOID, TEXTOID, TIMESTAMPTZOID, TIMESTAMPTZOID,
		INT8OID, INT4OID, TEXTOID, NAMEOID, TEXTOID, INTERVALOID,
	INT8OID, INT8OID, TEXTOID, TEXTOID, INT8OID, TEXTOID, INTERVALOID};
	Datum		values[17];
	char		nulls[17] = "                 ";
	NameData	runas;
	Interval   *paced = palloc0(sizeof(Interval));
	Interval   *paced_replicas = palloc0(sizeof(Interval));
	char	   *relname = get_rel_name(log->relation);
	char	   *registered;
	/* a database still at 1.0 (not yet ALTER EXTENSION UPDATE'd) has no paced_replicas */
	bool		v11 = get_attnum(get_relname_relid("archive_cluster_run_log", ac_extension_schema()),
								 "paced_replicas") != InvalidAttrNumber;

	sql = psprintf("INSERT INTO %s (relation, relation_name, started_at, finished_at,"
				   " rows_moved, batches, started_by, run_as, error, paced,"
				   " rows_refused, rows_busy, left_behind, kind, bytes_written, detail%s)"
				   " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16%s)",
				   ac_extension_object("archive_cluster_run_log"),
				   v11 ? ", paced_replicas" : "", v11 ? ", $17" : "");
	values[0] = ObjectIdGetDatum(log->relation);
	values[1] = CStringGetTextDatum(relname ? ac_qualified_name(log->relation) : "?");
	values[2] = TimestampTzGetDatum(log->started);
	values[3] = TimestampTzGetDatum(log->finished);
	values[4] = Int64GetDatum(log->rows);
	values[5] = Int32GetDatum(log->batches);
	values[6] = CStringGetTextDatum(log->started_by);
	if (OidIsValid(log->run_as))
	{
		namestrcpy(&runas, GetUserNameFromId(log->run_as, false));
		values[7] = NameGetDatum(&runas);
	}
	else
		nulls[7] = 'n';
	ac_log_text(log->error, &values[8], &nulls[8]);
	paced->time = log->paced_us;
	values[9] = IntervalPGetDatum(paced);
	values[10] = Int64GetDatum(log->rows_refused);
	values[11] = Int64GetDatum(log->rows_busy);
	ac_log_text(log->left_behind, &values[12], &nulls[12]);
	values[13] = CStringGetTextDatum(log->kind ? log->kind : AC_KIND_ARCHIVE);
	values[14] = Int64GetDatum(log->bytes);
	ac_log_text(log->detail, &values[15], &nulls[15]);
	paced_replicas->time = log->replica_us;
	values[16] = IntervalPGetDatum(paced_replicas);

	ac_exec_as_extension_owner(sql, v11 ? 17 : 16, argtypes, values, nulls, SPI_OK_INSERT);

	sql = psprintf("DELETE FROM %s WHERE run_id OPERATOR(pg_catalog.=) ANY (ARRAY("
				   " SELECT run_id FROM %s WHERE relation OPERATOR(pg_catalog.=) $1"
				   " AND run_id OPERATOR(pg_catalog.<=) (SELECT run_id FROM %s"
				   "  WHERE relation OPERATOR(pg_catalog.=) $1"
				   "  ORDER BY run_id DESC OFFSET $2 LIMIT 1)"
				   " FOR UPDATE SKIP LOCKED))",
				   ac_extension_object("archive_cluster_run_log"),
				   ac_extension_object("archive_cluster_run_log"),
				   ac_extension_object("archive_cluster_run_log"));
	argtypes[1] = INT4OID;
	values[1] = Int32GetDatum(archive_cluster_run_log_max_rows);
	ac_exec_as_extension_owner(sql, 2, argtypes, values, NULL, SPI_OK_DELETE);

	/*
	 * the rows of tables no longer registered (in either table of
	 * registrations, since 1.1): as many again, in all
	 */
	registered = v11 ?
		psprintf("(SELECT relation FROM %s UNION ALL SELECT relation FROM %s)",
				 ac_extension_object("archive_cluster_config"),
				 ac_extension_object("archive_cluster_partitioned")) :
		ac_extension_object("archive_cluster_config");
	sql = psprintf("DELETE FROM %s WHERE run_id OPERATOR(pg_catalog.=) ANY (ARRAY("
				   " SELECT l.run_id FROM %s l WHERE NOT EXISTS (SELECT FROM %s c"
				   "  WHERE c.relation OPERATOR(pg_catalog.=) l.relation)"
				   " AND l.run_id OPERATOR(pg_catalog.<=) (SELECT o.run_id FROM %s o"
				   "  WHERE NOT EXISTS (SELECT FROM %s c WHERE c.relation OPERATOR(pg_catalog.=) o.relation)"
				   "  ORDER BY o.run_id DESC OFFSET $1 LIMIT 1)"
				   " FOR UPDATE OF l SKIP LOCKED))",
				   ac_extension_object("archive_cluster_run_log"),
				   ac_extension_object("archive_cluster_run_log"),
				   registered,
				   ac_extension_object("archive_cluster_run_log"),
				   registered);
	argtypes[0] = INT4OID;
	values[0] = Int32GetDatum(archive_cluster_run_log_max_rows);
	ac_exec_as_extension_owner(sql, 1, argtypes, values, NULL, SPI_OK_DELETE);
}

/*
 * (The rows each call deletes are locked with SKIP LOCKED: rows another
 * open transaction is deleting, trimming the same history, are left to it,
 * rather than make this run wait for that transaction.)
 */

/* Record a run that failed with this error. */
void
ac_log_run_error(Oid relation, const char *kind, TimestampTz started,
				 const char *started_by, Oid run_as, const char *error)
{
	AcRunLog	log = {0};

	log.relation = relation;
	log.kind = kind;
	log.started = started;
	log.finished = GetCurrentTimestamp();
	log.started_by = started_by;
	log.run_as = run_as;
	log.error = error;
	ac_log_run(&log);
}

/*
 * Did the last recorded run of this table leave rows that the archive
 * refused?  Then the next run checks each row before moving it, instead of
 * failing on the same rows first.  Called connected to SPI.
 */
bool
ac_last_run_refused(Oid relation)
{
	char	   *sql;
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	bool		result = false;

	sql = psprintf("SELECT rows_refused OPERATOR(pg_catalog.>) 0 FROM %s"
				   " WHERE relation OPERATOR(pg_catalog.=) $1 AND error IS NULL"
				   " AND kind OPERATOR(pg_catalog.=) '" AC_KIND_ARCHIVE "'"
				   " ORDER BY run_id DESC LIMIT 1",
				   ac_extension_object("archive_cluster_run_log"));
	values[0] = ObjectIdGetDatum(relation);
	/* the log is the extension owner's (its errors may be anyone's keys) */
	if (ac_exec_as_extension_owner(sql, 1, argtypes, values, NULL, SPI_OK_SELECT) == 1)
	{
		bool		isnull;

		result = DatumGetBool(SPI_getbinval(SPI_tuptable->vals[0],
											SPI_tuptable->tupdesc, 1, &isnull));
	}
	return result;
}

/*
 * When the worker may try a table again whose latest runs failed: after
 * naptime x 2^failures (at most an hour) from the latest failure, failures
 * counted back from the newest run to the first that did not fail; 0 when
 * the latest run did not fail.  So that a lasting error does not fill the
 * run history, and without memory of its own (workers are short-lived).
 */
TimestampTz
ac_run_backoff_until(Oid relation, const char *kind)
{
	char	   *sql;
	Oid			argtypes[2] = {REGCLASSOID, TEXTOID};
	Datum		values[2];
	uint64		n;
	uint64		failures = 0;
	TimestampTz latest = 0;
	int64		secs;

	sql = psprintf("SELECT started_at, error IS NOT NULL FROM %s"
				   " WHERE relation OPERATOR(pg_catalog.=) $1 AND kind OPERATOR(pg_catalog.=) $2"
				   " ORDER BY run_id DESC LIMIT 21",
				   ac_extension_object("archive_cluster_run_log"));
	values[0] = ObjectIdGetDatum(relation);
	values[1] = CStringGetTextDatum(kind);
	n = ac_exec_as_extension_owner(sql, 2, argtypes, values, NULL, SPI_OK_SELECT);
	while (failures < n)
	{
		bool		isnull;
		HeapTuple	tup = SPI_tuptable->vals[failures];

		if (!DatumGetBool(SPI_getbinval(tup, SPI_tuptable->tupdesc, 2, &isnull)))
			break;
		if (failures == 0)
			latest = DatumGetTimestampTz(SPI_getbinval(tup, SPI_tuptable->tupdesc, 1, &isnull));
		failures++;
	}
	if (failures == 0)
		return 0;
	secs = Min((int64) archive_cluster_naptime << failures, 3600);
	return latest + secs * USECS_PER_SEC;
}
