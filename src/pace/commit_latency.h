/*-------------------------------------------------------------------------
 *
 * commit_latency.h
 *		What other sessions' commits wait, for the pacer (commit_latency.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_COMMIT_LATENCY_H
#define ARCHIVE_CLUSTER_COMMIT_LATENCY_H

#include "datatype/timestamp.h"

/* quarters of powers of two of microseconds, from 16 us to 12.6 s, and above */
#define AC_LATENCY_BUCKETS		80

extern void ac_commit_latency_init_hooks(void);
extern bool ac_commit_latency_available(void);
extern TimestampTz ac_commit_latency_last_write(void);
extern void ac_commit_latency_job(void);
extern void ac_commit_latency_busy(TimestampTz until);
extern void ac_commit_latency_read(uint64 *busy, uint64 *quiet);
extern double ac_latency_quantile(const uint64 *counts, double q, uint64 *n);

#endif							/* ARCHIVE_CLUSTER_COMMIT_LATENCY_H */
