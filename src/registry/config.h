/*-------------------------------------------------------------------------
 *
 * config.h
 *		Reading and writing archive_cluster's own tables: the registered tables
 *		and the run history (config.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_CONFIG_H
#define ARCHIVE_CLUSTER_CONFIG_H

#include "archive_cluster.h"

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

#endif							/* ARCHIVE_CLUSTER_CONFIG_H */
