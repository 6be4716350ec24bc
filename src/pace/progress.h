/*-------------------------------------------------------------------------
 *
 * progress.h
 *		What each running job is doing, for archive_cluster_progress()
 *		(progress.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_PROGRESS_H
#define ARCHIVE_CLUSTER_PROGRESS_H

typedef enum AcPhase
{
	AC_PHASE_STARTING,
	AC_PHASE_SCANNING,			/* collecting the rows of a batch */
	AC_PHASE_DELETING,			/* deleting them from where they are */
	AC_PHASE_SORTING,
	AC_PHASE_WRITING,			/* writing them sorted, and their index entries */
	AC_PHASE_WAITING_REPLICA	/* for a lagging standby or subscriber */
} AcPhase;

/* what sets a job's pace now */
typedef enum AcPaceReason
{
	AC_PACE_ALONE,				/* nobody else writes: full speed */
	AC_PACE_CEILING,			/* others' commits fine: the ceiling */
	AC_PACE_COMMITS,			/* others' commit latency */
	AC_PACE_FLOOR,				/* at archive_cluster.min_wal_rate */
	AC_PACE_RATE,				/* pacing = 'rate' (or no preload) */
	AC_PACE_OFF					/* not paced */
} AcPaceReason;

extern void ac_progress_init_hooks(void);
extern void ac_progress_begin(char kind, Oid relid, Oid owned_by, bool worker);
extern void ac_progress_phase(AcPhase phase);
extern void ac_progress_batch(int64 planned);
extern void ac_progress_rows(int64 done);
extern void ac_progress_pace(double rate, AcPaceReason reason, int64 paced_us);
extern void ac_progress_waiting(bool waiting, int64 lag_bytes, int64 waited_us);
extern void ac_progress_end(void);

#endif							/* ARCHIVE_CLUSTER_PROGRESS_H */
