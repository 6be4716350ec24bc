/*-------------------------------------------------------------------------
 *
 * guc.c
 *		archive_cluster's configuration parameters, all in one place.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <limits.h>

#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/varlena.h"

#include "base/guc.h"

/* archive_cluster.enabled: the background worker archives */
bool		archive_cluster_enabled = true;

/* archive_cluster.naptime: seconds between two checks of a database */
int			archive_cluster_naptime = 60;

/* archive_cluster.max_workers: workers at most at once, the launcher not counted */
int			archive_cluster_max_workers = 2;

/* archive_cluster.worker_time_slice: seconds a worker serves one database at most */
int			archive_cluster_worker_time_slice = 60;

/* archive_cluster.index_rebuild_fill: the worker rebuilds an archive's index less full than this, over a fresh build */
double		archive_cluster_index_rebuild_fill = 0.8;

/* archive_cluster.job_timeout: seconds a worker's job on one table may take, 0: no limit */
int			archive_cluster_job_timeout = 1800;

/* archive_cluster.extension_recheck_interval: seconds between looks at a database without the extension */
int			archive_cluster_extension_recheck_interval = 600;

/* archive_cluster.max_databases: databases the launcher keeps track of */
int			archive_cluster_max_databases = 1024;

/* archive_cluster.databases: the databases the worker serves; empty: all */
char	   *archive_cluster_databases = NULL;

/* archive_cluster.max_batch_rows: rows sorted and moved together at most */
int			archive_cluster_max_batch_rows = 10000000;

/* archive_cluster.max_runtime: seconds of batches per table and cycle */
int			archive_cluster_max_runtime = 0;

/* archive_cluster.run_flush_after: backend_flush_after of runs (8 kB pages) */
int			archive_cluster_run_flush_after = 32;

/* archive_cluster.run_max_wal_rate: MB/s of WAL of a run among other writers */
int			archive_cluster_run_max_wal_rate = 20;

/* archive_cluster.pacing: what sets a job's WAL rate among other writers */
int			archive_cluster_pacing = AC_PACING_EFFECT;

static const struct config_enum_entry ac_pacing_options[] = {
	{"effect", AC_PACING_EFFECT, false},
	{"rate", AC_PACING_RATE, false},
	{"off", AC_PACING_OFF, false},
	{NULL, 0, false}
};

/* archive_cluster.max_commit_slowdown: others' commit p99 while a job writes, over without */
double		archive_cluster_max_commit_slowdown = 1.5;

/* archive_cluster.min_wal_rate: MB/s a job paced by its effect keeps at least */
int			archive_cluster_min_wal_rate = 2;

/* archive_cluster.max_replica_lag: MB of WAL a streaming peer may lag before a batch; -1 off */
int			archive_cluster_max_replica_lag = 256;

/* archive_cluster.max_replica_wait: seconds a batch waits for such a peer at most */
int			archive_cluster_max_replica_wait = 300;

/* archive_cluster.compaction: the background worker compacts archives */
bool		archive_cluster_compaction = true;

/* archive_cluster.allow_on_subscriber: move rows of logical replication targets */
bool		archive_cluster_allow_on_subscriber = false;

/* archive_cluster.compaction_threshold: share of a key's pages compaction saves */
double		archive_cluster_compaction_threshold = 0.1;

/* archive_cluster.compaction_max_wal_rate: MB/s of WAL of a compaction */
int			archive_cluster_compaction_max_wal_rate = 20;

/* archive_cluster.lock_timeout: ms a run waits for a table's lock, then skips it */
int			archive_cluster_lock_timeout = 1000;

/* archive_cluster.tier_lookup: a look-up by one unique key stops at its tier */
bool		archive_cluster_tier_lookup = true;

/* archive_cluster.run_log_max_rows: rows of archive_cluster_runs kept per table */
int			archive_cluster_run_log_max_rows = 1000;

/* archive_cluster.debug_pause: phases of a run that wait (tests only) */
char	   *archive_cluster_debug_pause = NULL;

/* archive_cluster.databases must be a list of names */
static bool
ac_check_databases(char **newval, void **extra, GucSource source)
{
	char	   *raw = pstrdup(*newval);
	List	   *names;
	bool		ok = SplitIdentifierString(raw, ',', &names);

	if (!ok)
		GUC_check_errdetail("List syntax is invalid.");
	list_free(names);
	pfree(raw);
	return ok;
}

/* archive_cluster.debug_pause must name known phases */
static bool
ac_check_debug_pause(char **newval, void **extra, GucSource source)
{
	char	   *raw = pstrdup(*newval);
	List	   *names;
	ListCell   *lc;
	bool		ok = SplitIdentifierString(raw, ',', &names);

	if (!ok)
		GUC_check_errdetail("List syntax is invalid.");
	foreach(lc, names)
	{
		const char *name = lfirst(lc);

		if (ok && strcmp(name, "locked") != 0 && strcmp(name, "deleted") != 0 &&
			strcmp(name, "before_commit") != 0 && strcmp(name, "row_read") != 0 &&
			strcmp(name, "upsert_checked") != 0 && strcmp(name, "pruned") != 0 &&
			strcmp(name, "leaf_page") != 0)
		{
			GUC_check_errdetail("Unknown phase \"%s\": use locked, deleted, before_commit, row_read, upsert_checked, pruned or leaf_page.",
								name);
			ok = false;
		}
	}
	list_free(names);
	pfree(raw);
	return ok;
}

/* Is dbname one of archive_cluster.databases (or is that list empty)? */
bool
ac_database_selected(const char *dbname)
{
	char	   *raw;
	List	   *names;
	ListCell   *lc;
	bool		found = false;

	if (archive_cluster_databases == NULL || archive_cluster_databases[0] == '\0')
		return true;
	raw = pstrdup(archive_cluster_databases);
	if (!SplitIdentifierString(raw, ',', &names))
		elog(ERROR, "invalid archive_cluster.databases");
	foreach(lc, names)
		if (strcmp((char *) lfirst(lc), dbname) == 0)
			found = true;
	list_free(names);
	pfree(raw);
	return found;
}

void
ac_define_gucs(void)
{
	DefineCustomBoolVariable("archive_cluster.enabled",
							 "Lets the background worker archive registered tables.",
							 "Off: the workers keep running but move nothing; manual "
							 "and pg_cron runs still work.",
							 &archive_cluster_enabled,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.naptime",
							"Time between two checks of the registered tables of a database.",
							"Also how soon a new database is noticed.",
							&archive_cluster_naptime,
							60, 1, 86400,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.max_workers",
							"Largest number of archive_cluster workers running at once.",
							"The launcher is not counted.  Workers are taken from "
							"max_worker_processes, like parallel query's and other extensions'.",
							&archive_cluster_max_workers,
							2, 1, 1024,
							PGC_SIGHUP, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.worker_time_slice",
							"Time after which a worker leaves its database to the next one "
							"that waits.",
							"Checked between batches: a batch that has started completes.  "
							"The database gets another worker in its turn.",
							&archive_cluster_worker_time_slice,
							60, 1, 86400,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.job_timeout",
							"Longest time a worker spends on one job of a table: a batch of a "
							"run, or a compaction.",
							"The job is canceled, the table waits for its backoff and the worker "
							"goes on; a worker still at it 10 s later is ended by the launcher.  "
							"Bounds the table owner's code that the job runs (CHECK constraints, "
							"index expressions).  0: no limit.",
							&archive_cluster_job_timeout,
							1800, 0, INT_MAX / 1000,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.extension_recheck_interval",
							"Time between two looks at a database where the extension "
							"is not installed.",
							"CREATE EXTENSION archive_cluster is noticed at once; this is for "
							"databases restored or copied with the extension in them.",
							&archive_cluster_extension_recheck_interval,
							600, 1, 86400,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);

	/*
	 * Sizes shared memory: only while the postmaster loads the library (a
	 * session loading it later may not define a PGC_POSTMASTER setting).
	 */
	if (process_shared_preload_libraries_in_progress)
		DefineCustomIntVariable("archive_cluster.max_databases",
								"Largest number of databases the launcher serves.",
								"Databases beyond it are not archived by workers, and the "
								"launcher says so in the log.",
								&archive_cluster_max_databases,
								1024, 1, 100000,
								PGC_POSTMASTER, 0,
								NULL, NULL, NULL);

	DefineCustomStringVariable("archive_cluster.databases",
							   "Databases the background worker serves (comma-separated).",
							   "Empty: every database that has the extension.",
							   &archive_cluster_databases,
							   "",
							   PGC_SIGHUP, GUC_LIST_INPUT,
							   ac_check_databases, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.max_batch_rows",
							"Largest number of rows a run sorts and moves as one batch.",
							"A run moves all eligible rows of a table, sorted together, in "
							"batches of at most this many rows (but at least the table's threshold).",
							&archive_cluster_max_batch_rows,
							10000000, 1000, (int) AC_MAX_BATCH_ROWS,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.max_runtime",
							"Time after which the background worker starts no further batch "
							"of a table in one cycle.",
							"0: no limit.  A batch that has started always completes.",
							&archive_cluster_max_runtime,
							0, 0, 86400,
							PGC_SIGHUP, GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.run_flush_after",
							"Amount of data a run or compaction writes after which the kernel is asked to "
							"write it back (backend_flush_after of jobs).",
							"Keeps a run's or compaction's writes from piling up as dirty page cache, which "
							"would stall the WAL flushes of concurrent commits; paced by its effect, a job "
							"also has the kernel write back its relations' files every 250 ms (not with "
							"fsync off or direct I/O).  0: the kernel decides.",
							&archive_cluster_run_flush_after,
							32, 0, 256,
							PGC_USERSET, GUC_UNIT_BLOCKS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.run_max_wal_rate",
							"Megabytes of WAL per second a run writes at most while other "
							"transactions are writing.",
							"Commits wait for the WAL written before them, a run's too.  A run "
							"alone is not slowed down.  0: no limit.",
							&archive_cluster_run_max_wal_rate,
							20, 0, 10000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomEnumVariable("archive_cluster.pacing",
							 "What sets the WAL rate of a run or compaction while other transactions "
							 "are writing.",
							 "effect: what others' commits wait, at most run_max_wal_rate or "
							 "compaction_max_wal_rate (needs the library preloaded; otherwise as rate); "
							 "rate: those rates; off: no pacing.",
							 &archive_cluster_pacing,
							 AC_PACING_EFFECT, ac_pacing_options,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("archive_cluster.max_commit_slowdown",
							 "How much slower others' commits may be while a run or compaction writes, "
							 "as the ratio of their p99 latencies.",
							 "With pacing = effect, a job aims halfway to it: it halves its WAL rate when the "
							 "p99 of client sessions' writing transactions (statement start to commit end) "
							 "made while it writes exceeds (1 + this) / 2 times their p99 while no job "
							 "writes (1.25 at the default), compared in histogram buckets 14-25% apart.",
							 &archive_cluster_max_commit_slowdown,
							 1.5, 1.0, 100.0,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.min_wal_rate",
							"Megabytes of WAL per second a run or compaction paced by its effect "
							"keeps at least.",
							"So that a job finishes however slow others' commits are.",
							&archive_cluster_min_wal_rate,
							2, 1, 10000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.max_replica_lag",
							"WAL a standby or a subscriber may have left to apply before a run "
							"writes its next batch.",
							"The run waits while a streaming peer lags more, at most "
							"archive_cluster.max_replica_wait.  -1: no wait.",
							&archive_cluster_max_replica_lag,
							256, -1, INT_MAX / 2,
							PGC_SUSET, GUC_UNIT_MB,
							NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.max_replica_wait",
							"Seconds a run waits at most for a lagging standby or subscriber "
							"before a batch.",
							"After it, the run stops; the worker goes on at its next turn.",
							&archive_cluster_max_replica_wait,
							300, 0, 86400,
							PGC_SUSET, GUC_UNIT_S,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("archive_cluster.compaction",
							 "Whether the background worker compacts the archives of registered tables.",
							 "A table's archive is compacted when archive_cluster_compact() finds it due "
							 "(archive_cluster.compaction_threshold).",
							 &archive_cluster_compaction,
							 true,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomBoolVariable("archive_cluster.allow_on_subscriber",
							 "Whether runs and compactions move rows of a registered table whose tiers "
							 "a logical replication subscription writes into.",
							 "Off: the worker skips such tables and a call naming one is refused, since "
							 "the publisher's later changes of a moved row would miss it.",
							 &archive_cluster_allow_on_subscriber,
							 false,
							 PGC_SUSET, 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("archive_cluster.compaction_threshold",
							 "Share of the heap pages a key's archived rows lie on that a compaction "
							 "must save for it to be due.",
							 "Measured on keys sampled from the archive's cluster index: the loose pages "
							 "of a key's rows, less the pages those rows would fill rewritten together, "
							 "over all the pages of its rows.",
							 &archive_cluster_compaction_threshold,
							 0.1, 0.0, 1.0,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomRealVariable("archive_cluster.index_rebuild_fill",
							 "Fill of an archive index's leaf pages, over a fresh build's, below which "
							 "the background worker rebuilds it after a compaction.",
							 "Measured on a sample of its pages (archive_cluster_index_fill()) and divided "
							 "by its fillfactor (a fresh build's fill).  The rebuild is REINDEX INDEX "
							 "CONCURRENTLY.  0: never.",
							 &archive_cluster_index_rebuild_fill,
							 0.8, 0.0, 0.95,
							 PGC_SIGHUP, 0,
							 NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.compaction_max_wal_rate",
							"Megabytes of WAL per second a compaction writes at most.",
							"The ceiling of pacing by effect; with archive_cluster.pacing = rate, the rate, "
							"whether others write or not.  0: no limit.",
							&archive_cluster_compaction_max_wal_rate,
							20, 0, 10000,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.lock_timeout",
							"Longest time a run waits for the lock on a registered table's "
							"view or tables.",
							"A table whose lock is not granted in time is skipped "
							"(\"skipped: lock not available\") and tried again by a later run, "
							"so that a lock held for long on one table delays no other.",
							&archive_cluster_lock_timeout,
							1000, 0, 3600000,
							PGC_USERSET, GUC_UNIT_MS,
							NULL, NULL, NULL);

	DefineCustomIntVariable("archive_cluster.run_log_max_rows",
							"Rows of archive_cluster_runs kept per registered table.",
							"Each run that records a row deletes that table's oldest rows "
							"beyond this number.",
							&archive_cluster_run_log_max_rows,
							1000, 1, INT_MAX,
							PGC_SUSET, 0,
							NULL, NULL, NULL);

	DefineCustomBoolVariable("archive_cluster.tier_lookup",
							 "Lets a look-up by one key of a unique index of a table in table "
							 "mode stop at the tier that holds the row.",
							 "Off: both tiers are read, as for any table with a child.",
							 &archive_cluster_tier_lookup,
							 true,
							 PGC_USERSET, 0,
							 NULL, NULL, NULL);

	DefineCustomStringVariable("archive_cluster.debug_pause",
							   "Phases of a run, or of the view's trigger, that wait for an advisory lock (for tests).",
							   "A comma-separated list of locked, deleted, before_commit (runs), "
							   "row_read (the view's UPDATE/DELETE trigger, after the statement read the row), "
							   "upsert_checked (table mode's INSERT ... ON CONFLICT, after its look-ups), "
							   "pruned (a statement planned without the archive, before it runs) "
							   "and leaf_page (a pass over a leaf partition, after each page it wrote): "
							   "at each, the session waits while another holds "
							   "pg_advisory_lock(1094930497, n), n = 1, 2, 3, 4, 5, 6, 7 respectively.",
							   &archive_cluster_debug_pause,
							   "",
							   PGC_SUSET, GUC_LIST_INPUT | GUC_NOT_IN_SAMPLE,
							   ac_check_debug_pause, NULL, NULL);

	MarkGUCPrefixReserved("archive_cluster");
}
