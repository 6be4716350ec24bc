/*-------------------------------------------------------------------------
 *
 * alter.c
 *		archive_cluster_alter(): change a registered table's settings (hot
 *		window, batch size, lock timeout of its runs, cluster key) without
 *		unregistering it.
 *
 *		Only the configuration row changes, checked as at registration, by
 *		the table's owner; the change is recorded in the run history (kind
 *		'alter', what changed in its detail).  Runs and compactions read the
 *		configuration when they start: one in progress finishes with the
 *		settings it started with.  Rows already archived stay where they
 *		are; a new cluster key orders the later batches and compactions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "catalog/pg_type.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "archive_cluster.h"
#include "admin/settings.h"
#include "registry/tiers.h"
#include "base/util.h"
#include "registry/config.h"

PG_FUNCTION_INFO_V1(archive_cluster_alter);

/* an interval as PostgreSQL prints it */
static char *
ac_interval_text(Interval *iv)
{
	return DatumGetCString(DirectFunctionCall1(interval_out, IntervalPGetDatum(iv)));
}

/* "{a,b}" */
static char *
ac_cluster_by_text(char **cluster_by, int ncluster)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	appendStringInfoChar(&buf, '{');
	for (i = 0; i < ncluster; i++)
		appendStringInfo(&buf, "%s%s", i > 0 ? "," : "", quote_identifier(cluster_by[i]));
	appendStringInfoChar(&buf, '}');
	return buf.data;
}

/* "NNN ms", or the setting it falls back to */
static char *
ac_lock_timeout_text(int ms)
{
	return ms > 0 ? psprintf("%d ms", ms) : pstrdup("archive_cluster.lock_timeout");
}

/* "batch_rows N", or the threshold it falls back to */
static char *
ac_batch_rows_text(int64 rows)
{
	return rows > 0 ? psprintf(INT64_FORMAT, rows) : pstrdup("automatic");
}

/* one "name: old -> new" into the change's description, when it changes */
static void
ac_describe(StringInfo detail, const char *name, const char *before, const char *after)
{
	if (strcmp(before, after) == 0)
		return;
	appendStringInfo(detail, "%s%s: %s -> %s", detail->len > 0 ? "; " : "", name, before, after);
}

/* a column of tier rel (attribute attno) that a cluster key can use */
static void
ac_check_key_column(Relation rel, AttrNumber attno, const char *name)
{
	Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attno - 1);

	if (!att->attnotnull)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("column \"%s\" of relation \"%s\" must be NOT NULL",
						NameStr(att->attname), RelationGetRelationName(rel)),
				 errhint("Add the constraint with ALTER TABLE ... ALTER COLUMN ... SET NOT NULL.")));
	if (!OidIsValid(lookup_type_cache(att->atttypid, TYPECACHE_LT_OPR)->lt_opr))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("column \"%s\" of type %s has no default btree ordering",
						name, format_type_be(att->atttypid)),
				 errhint("cluster_by columns must be of types that can be sorted, such as integer, text or uuid.")));
}

/*
 * Each column of a new cluster key, named as runs and compactions will
 * find it: a column of the view (table mode: of <t>), whose column in each
 * tier is NOT NULL and sortable.  The relation and <t>_current are locked
 * by the caller; the archive is locked here, so that none of them changes
 * before this commits.
 */
static void
ac_check_new_cluster_by(AcTableConfig *cfg, char **cluster_by, int ncluster)
{
	Relation	view = relation_open(cfg->relation, AccessShareLock);
	Relation	cur = relation_open(cfg->current, AccessShareLock);
	Relation	arc = relation_open(cfg->archive, AccessShareLock);
	AttrNumber *curatt;
	AttrNumber *arcatt;
	int			i;

	ac_tiers_columns(view, cfg->table_mode, cfg->current, arc, &curatt, &arcatt);
	for (i = 0; i < ncluster; i++)
	{
		int			col = ac_view_column_named(view, cluster_by[i]);

		if (col < 0)
			ereport(ERROR,
					(errcode(ERRCODE_UNDEFINED_COLUMN),
					 errmsg("column \"%s\" of relation \"%s\" does not exist",
							cluster_by[i], RelationGetRelationName(view)),
					 errhint("Column names in cluster_by are taken exactly as stored: case-sensitive and unquoted.")));
		ac_check_key_column(cur, curatt[col], cluster_by[i]);
		ac_check_key_column(arc, arcatt[col], cluster_by[i]);
	}
	relation_close(arc, NoLock);
	relation_close(cur, NoLock);
	relation_close(view, NoLock);
}

/* the lock_timeout argument in ms: 0 (back to the setting), or 1 ms to 1 hour */
static int
ac_lock_timeout_arg(Interval *iv)
{
	int64		us;

	if (!ac_interval_us(iv, &us) || us < 0 || (us > 0 && us < 1000) || us > USECS_PER_HOUR)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock_timeout must be between 1 millisecond and 1 hour, or 0"),
				 errhint("0 returns to archive_cluster.lock_timeout.")));
	return (int) (us / 1000);
}

/*
 * Write the new settings into the configuration row (locked by the caller)
 * and record the change in the run history.
 */
static void
ac_alter_config(Oid relid, Interval *hot_window, int64 batch_rows, int lock_timeout_ms,
				char **cluster_by, int ncluster, const char *detail)
{
	Oid			argtypes[5] = {REGCLASSOID, INTERVALOID, INT8OID, INTERVALOID, NAMEARRAYOID};
	Datum		values[5];
	char		nulls[5] = "     ";
	Interval   *timeout;
	Datum	   *names;
	AcRunLog	log;
	int			i;

	values[0] = ObjectIdGetDatum(relid);
	values[1] = IntervalPGetDatum(hot_window);
	values[2] = Int64GetDatum(batch_rows);
	if (batch_rows == 0)
		nulls[2] = 'n';
	timeout = palloc0(sizeof(Interval));
	timeout->time = (int64) lock_timeout_ms * 1000;
	values[3] = IntervalPGetDatum(timeout);
	if (lock_timeout_ms == 0)
		nulls[3] = 'n';
	names = palloc(sizeof(Datum) * ncluster);
	for (i = 0; i < ncluster; i++)
	{
		Name		n = palloc0(sizeof(NameData));

		namestrcpy(n, cluster_by[i]);
		names[i] = NameGetDatum(n);
	}
	values[4] = PointerGetDatum(construct_array(names, ncluster, NAMEOID, NAMEDATALEN,
												false, TYPALIGN_CHAR));
	if (ac_exec_as_extension_owner(psprintf("UPDATE %s SET hot_window = $2, batch_rows = $3,"
											" lock_timeout = $4, cluster_by = $5"
											" WHERE relation OPERATOR(pg_catalog.=) $1",
											ac_extension_object("archive_cluster_config")),
								   5, argtypes, values, nulls, SPI_OK_UPDATE) != 1)
		elog(ERROR, "configuration row of relation %u not updated", relid);

	memset(&log, 0, sizeof(log));
	log.relation = relid;
	log.kind = AC_KIND_ALTER;
	log.started = log.finished = GetCurrentTimestamp();
	log.started_by = "manual";
	log.run_as = GetUserId();
	log.detail = detail;
	ac_log_run(&log);
}

/*
 * archive_cluster_alter(relation, hot_window, batch_rows, lock_timeout,
 * cluster_by): each argument left NULL keeps its setting; batch_rows 0
 * returns to the threshold from the table's statistics, lock_timeout 0 to
 * archive_cluster.lock_timeout.  Returns the change's description ("" when
 * nothing changed, which is not recorded).
 */
Datum
archive_cluster_alter(PG_FUNCTION_ARGS)
{
	Oid			relid;
	AcTableConfig cfg;
	AcTableConfig locked;
	Interval	hot_window;
	int64		batch_rows;
	int			lock_timeout_ms;
	char	   *cluster_by[AC_MAX_CLUSTER_COLS];
	int			ncluster;
	StringInfoData detail;
	Oid			argtypes[1] = {REGCLASSOID};
	Datum		values[1];
	MemoryContext caller = CurrentMemoryContext;
	MemoryContext oldcxt;
	text	   *result;
	int			i;

	if (PG_ARGISNULL(0))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("relation must not be NULL")));
	relid = PG_GETARG_OID(0);

	/*
	 * Locks in the order runs and unregistering take them (the view, then
	 * its tables, then the configuration row), each ownership checked under
	 * its lock: ACCESS SHARE, which waits only for DDL.
	 */
	ac_check_relation_exists(relid);
	LockRelationOid(relid, AccessShareLock);
	ac_check_relation_exists(relid);
	ac_check_owner(relid);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	ac_load_config_or_error(relid, &cfg);
	LockRelationOid(cfg.current, AccessShareLock);
	ac_check_owner(cfg.current);

	/*
	 * The configuration row locked (FOR NO KEY UPDATE: runs' foreign-key
	 * checks of it go on), then read again: concurrent changes of one table
	 * apply one after the other, each describing what it changed.  No row:
	 * unregistered meanwhile, or registered after this transaction's
	 * snapshot.
	 */
	values[0] = ObjectIdGetDatum(relid);
	if (ac_exec_as_extension_owner(psprintf("SELECT FROM %s WHERE relation OPERATOR(pg_catalog.=) $1"
											" FOR NO KEY UPDATE",
											ac_extension_object("archive_cluster_config")),
								   1, argtypes, values, NULL, SPI_OK_SELECT) != 1)
	{
		if (ac_load_config(relid, &locked))
			ereport(ERROR,
					(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
					 errmsg("could not serialize access due to concurrent registration"),
					 errhint("Call archive_cluster_alter() again in a new transaction.")));
		ac_load_config_or_error(relid, &locked);
	}
	ac_load_config_or_error(relid, &locked);
	if (locked.current != cfg.current || locked.archive != cfg.archive)
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent registration"),
				 errhint("Call archive_cluster_alter() again.")));
	cfg = locked;

	hot_window = cfg.hot_window;
	if (!PG_ARGISNULL(1))
	{
		hot_window = *PG_GETARG_INTERVAL_P(1);
		ac_check_hot_window(&hot_window);
	}
	batch_rows = cfg.batch_rows;
	if (!PG_ARGISNULL(2))
	{
		batch_rows = PG_GETARG_INT64(2);
		if (batch_rows != 0)
			ac_check_batch_rows(batch_rows, "Pass 0 to size batches from the table's statistics.");
	}
	lock_timeout_ms = cfg.lock_timeout_ms;
	if (!PG_ARGISNULL(3))
		lock_timeout_ms = ac_lock_timeout_arg(PG_GETARG_INTERVAL_P(3));
	ncluster = cfg.ncluster;
	for (i = 0; i < ncluster; i++)
		cluster_by[i] = cfg.cluster_by[i];
	if (!PG_ARGISNULL(4))
	{
		ncluster = ac_parse_cluster_by(PG_GETARG_ARRAYTYPE_P(4), cluster_by);
		ac_check_new_cluster_by(&cfg, cluster_by, ncluster);
	}

	initStringInfo(&detail);
	ac_describe(&detail, "hot_window", ac_interval_text(&cfg.hot_window), ac_interval_text(&hot_window));
	ac_describe(&detail, "batch_rows", ac_batch_rows_text(cfg.batch_rows), ac_batch_rows_text(batch_rows));
	ac_describe(&detail, "lock_timeout", ac_lock_timeout_text(cfg.lock_timeout_ms),
				ac_lock_timeout_text(lock_timeout_ms));
	ac_describe(&detail, "cluster_by", ac_cluster_by_text(cfg.cluster_by, cfg.ncluster),
				ac_cluster_by_text(cluster_by, ncluster));
	if (detail.len > 0)
		ac_alter_config(relid, &hot_window, batch_rows, lock_timeout_ms, cluster_by, ncluster,
						detail.data);

	/* the description outlives SPI_finish() in the caller's context */
	oldcxt = MemoryContextSwitchTo(caller);
	result = cstring_to_text(detail.data);
	MemoryContextSwitchTo(oldcxt);
	SPI_finish();
	PG_RETURN_TEXT_P(result);
}
