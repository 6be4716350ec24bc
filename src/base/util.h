/*-------------------------------------------------------------------------
 *
 * util.h
 *		Small helpers shared by archive_cluster's SQL functions and jobs (util.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_UTIL_H
#define ARCHIVE_CLUSTER_UTIL_H

#include "postgres.h"

#include "datatype/timestamp.h"
#include "fmgr.h"
#include "storage/lockdefs.h"
#include "utils/elog.h"
#include "utils/relcache.h"

extern void ac_require_arg(FunctionCallInfo fcinfo, int argno, const char *name);
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

#endif							/* ARCHIVE_CLUSTER_UTIL_H */
