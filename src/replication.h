/*-------------------------------------------------------------------------
 *
 * replication.h
 *		Registered tables and logical replication (replication.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_REPLICATION_H
#define ARCHIVE_CLUSTER_REPLICATION_H

#include "archive_cluster.h"

extern char *ac_subscription_into(AcTableConfig *cfg, Oid *tier);
extern bool ac_subscribed_skip(AcTableConfig *cfg);
extern void ac_refuse_if_subscribed(AcTableConfig *cfg);
extern char *ac_unregister_check(AcTableConfig *cfg);
extern void ac_unregister_published(AcTableConfig *cfg, const char *relname, const char *pubname);

#endif							/* ARCHIVE_CLUSTER_REPLICATION_H */
