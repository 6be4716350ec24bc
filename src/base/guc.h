/*-------------------------------------------------------------------------
 *
 * guc.h
 *		archive_cluster's configuration parameters (guc.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AC_GUC_H
#define AC_GUC_H

/* the largest batch_rows and archive_cluster.max_batch_rows */
#define AC_MAX_BATCH_ROWS INT64CONST(100000000)

extern bool archive_cluster_enabled;
extern int	archive_cluster_naptime;
extern char *archive_cluster_databases;
extern int	archive_cluster_max_workers;
extern int	archive_cluster_worker_time_slice;
extern int	archive_cluster_job_timeout;
extern double archive_cluster_index_rebuild_fill;
extern int	archive_cluster_extension_recheck_interval;
extern int	archive_cluster_max_databases;
extern int	archive_cluster_max_batch_rows;
extern int	archive_cluster_max_runtime;
extern int	archive_cluster_run_flush_after;
extern int	archive_cluster_run_max_wal_rate;

/* archive_cluster.pacing */
typedef enum AcPacing
{
	AC_PACING_OFF,
	AC_PACING_RATE,
	AC_PACING_EFFECT
} AcPacing;
extern int	archive_cluster_pacing;
extern double archive_cluster_max_commit_slowdown;
extern int	archive_cluster_min_wal_rate;
extern int	archive_cluster_max_replica_lag;
extern int	archive_cluster_max_replica_wait;
extern char *archive_cluster_debug_pause;
extern int	archive_cluster_lock_timeout;
extern bool archive_cluster_compaction;
extern bool archive_cluster_allow_on_subscriber;
extern double archive_cluster_compaction_threshold;
extern int	archive_cluster_compaction_max_wal_rate;
extern int	archive_cluster_run_log_max_rows;
extern bool archive_cluster_tier_lookup;
extern void ac_define_gucs(void);
extern bool ac_database_selected(const char *dbname);

#endif							/* AC_GUC_H */
