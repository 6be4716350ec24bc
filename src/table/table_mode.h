/*-------------------------------------------------------------------------
 *
 * table_mode.h
 *		Registering a table in table mode, and unregistering it
 *		(table_mode.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_TABLE_MODE_H
#define ARCHIVE_CLUSTER_TABLE_MODE_H

#include "archive_cluster.h"

extern void ac_table_mode_check(Relation rel, Relation archive, const char *agecol,
								bool registering);
extern Oid	ac_table_mode_create(Oid relid, const char *arcname, const char *agecol);
extern uint64 ac_table_mode_remove(AcTableConfig *cfg, bool published);

#endif							/* ARCHIVE_CLUSTER_TABLE_MODE_H */
