/*-------------------------------------------------------------------------
 *
 * archive_cluster.h
 *		Declarations shared by archive_cluster's source files.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_H
#define ARCHIVE_CLUSTER_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "nodes/execnodes.h"
#include "nodes/pg_list.h"
#include "utils/palloc.h"
#include "storage/lockdefs.h"
#include "utils/relcache.h"

#include "base/guc.h"

#define AC_MAX_CLUSTER_COLS 8

/*
 * One registered table, as stored in archive_cluster_config.  View mode:
 * the view <t> over <t>_current and <t>_archive.  Table mode: <t> is both
 * relation and current (its own rows, ONLY <t>), <t>_archive its
 * inheritance child.
 */
typedef struct AcTableConfig
{
	Oid			relation;		/* the view, or the table in table mode */
	Oid			current;		/* <t>_current, or <t> in table mode */
	Oid			archive;		/* <t>_archive */
	bool		table_mode;
	int			ncluster;
	char	   *cluster_by[AC_MAX_CLUSTER_COLS];
	char	   *age_column;
	Interval	hot_window;
	int64		batch_rows;		/* 0 when not set */
	int			lock_timeout_ms;	/* its runs' lock waits; 0: archive_cluster.lock_timeout */
} AcTableConfig;

/* One run of one table, as archive_cluster_run() reports it. */
typedef struct AcRunResult
{
	const char *status;
	int64		rows;
	int			batches;
	int64		threshold;
	bool		more;			/* stopped at max_batches with rows unseen */
	int64		paced_us;		/* slept for archive_cluster.run_max_wal_rate */
	int64		bytes;			/* of the rows written into the archive */
	TimestampTz started;
	TimestampTz finished;
} AcRunResult;

/* kinds of archive_cluster_run_log rows */
#define AC_KIND_ARCHIVE "archive"
#define AC_KIND_COMPACTION "compaction"
#define AC_KIND_ALTER "alter"		/* archive_cluster_alter() changed settings */

/* One row of archive_cluster_run_log (ac_log_run). */
typedef struct AcRunLog
{
	Oid			relation;
	const char *kind;			/* AC_KIND_*; NULL: archive */
	int64		bytes;			/* of the rows written into the archive */
	TimestampTz started;
	TimestampTz finished;
	int64		rows;
	int			batches;
	int64		paced_us;
	const char *started_by;
	Oid			run_as;
	const char *error;			/* NULL: no error */
	int64		rows_refused;	/* left in <t>_current: the archive refused them */
	int64		rows_busy;		/* left in <t>_current: changed or locked meanwhile */
	const char *left_behind;	/* the first of each, NULL: none */
	const char *detail;			/* 'alter': what changed; NULL: none */
} AcRunLog;


/* config.c */
extern Oid	ac_extension_schema(void);
extern char *ac_extension_object(const char *name);
extern Oid	ac_extension_owner(void);
extern uint64 ac_exec_as_extension_owner(const char *sql, int nargs, Oid *argtypes,
										 Datum *values, const char *nulls,
										 int expected);
extern bool ac_load_config(Oid relation, AcTableConfig *cfg);
extern List *ac_registered_relations(void);
extern Oid	ac_registered_view_of(Oid relid);
extern void ac_load_config_or_error(Oid relid, AcTableConfig *cfg);
extern void ac_log_run(const AcRunLog *log);
extern void ac_log_run_error(Oid relation, const char *kind, TimestampTz started,
							 const char *started_by, Oid run_as, const char *error);
extern bool ac_last_run_refused(Oid relation);
extern TimestampTz ac_run_backoff_until(Oid relation, const char *kind);

/* run.c */
typedef void (*AcTableWork) (AcTableConfig *cfg, void *arg, AcRunResult *res);
extern void ac_each_table(FunctionCallInfo fcinfo, const char *kind, AcTableWork work,
						  void *arg);
extern void ac_flush_as_written(void);
extern void ac_run_log_of(AcRunLog *log, Oid relation, const char *kind,
						  const AcRunResult *res, const char *started_by, Oid run_as);
extern const char *ac_caller(void);
extern char *ac_table_begin(AcTableConfig *cfg, AcRunResult *res);
extern void ac_run_table(AcTableConfig *cfg, bool force, int max_batches,
						 const char *started_by, AcRunResult *res);

/* util.c */
extern void ac_check_owner(Oid relid);
extern void ac_check_relation_exists(Oid relid);
extern void ac_pause_point(const char *name, int phase);
extern void ac_report_caught(ErrorData *edata, int elevel, const char *relname);
extern Oid	ac_relation_owner(Oid relid);
extern bool ac_is_key_index(Relation idx);
extern int	ac_identity_key(Relation rel, AttrNumber *keys, Oid *eqops);
extern void ac_switch_to_owner(Oid relid, Oid *save_userid, int *save_sec_context,
							   int *save_nestlevel);
extern void ac_restore_user(Oid save_userid, int save_sec_context, int save_nestlevel);
extern void ac_no_row_security(void);
extern char *ac_qualified_name(Oid relid);
extern void ac_spi_exec(const char *sql, int expected);
extern void ac_lock_with_retries(Oid relid, int timeout_ms, int retries);
extern bool ac_lock_relation_bounded(Oid relid, LOCKMODE mode, int timeout_ms);
extern bool ac_interval_us(Interval *iv, int64 *us);
extern int	ac_interval_ms(Interval *iv, const char *argname);

#define AC_DEFAULT_THRESHOLD 100000

#endif							/* ARCHIVE_CLUSTER_H */
