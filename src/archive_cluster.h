/*-------------------------------------------------------------------------
 *
 * archive_cluster.h
 *		The types every part of archive_cluster shares: a registered table's
 *		configuration, the result of a run or compaction, a row of the run
 *		history.  Each module declares its functions in its own header.
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
	bool		lagged;			/* stopped: a replica lagged too long */
	int64		paced_us;		/* slept: for the WAL rate, for replicas */
	int64		replica_us;		/* of which for lagging replicas */
	int64		bytes;			/* of the rows written into the archive */
	TimestampTz started;
	TimestampTz finished;
} AcRunResult;

/* kinds of archive_cluster_run_log rows */
#define AC_KIND_ARCHIVE "archive"
#define AC_KIND_COMPACTION "compaction"
#define AC_KIND_ALTER "alter"		/* archive_cluster_alter() changed settings */
#define AC_KIND_PASS "pass"			/* a pass over a leaf partition */

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
	const char *detail;			/* 'alter': what changed; runs and compactions:
								 * how they were paced; NULL: none */
	int64		replica_us;		/* of paced_us, waited for lagging replicas */
} AcRunLog;


#define AC_DEFAULT_THRESHOLD 100000

#endif							/* ARCHIVE_CLUSTER_H */
