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

/* unregistering a table of which a tier is published (ac_unregister_check) */
typedef struct AcUnregisterPub
{
	char	   *pubname;		/* a publication of either tier, or NULL */
	bool		move;			/* the archive's rows go back as deletes and
								 * inserts (the archive is published) */
	char	   *relname;		/* the table's name and its 'schema.name', */
	char	   *literal;		/* taken before anything is dropped */
} AcUnregisterPub;

extern char *ac_subscription_into(AcTableConfig *cfg, Oid *tier);
extern bool ac_subscribed_skip(AcTableConfig *cfg);
extern void ac_refuse_if_subscribed(AcTableConfig *cfg);
extern void ac_refuse_if_half_published(AcTableConfig *cfg);
extern char *ac_leaf_subscription(Oid leaf, Oid *target);
extern void ac_refuse_leaf_moves_lost(Oid leaf, Oid root);
extern void ac_unregister_check(AcTableConfig *cfg, AcUnregisterPub *pub);
extern void ac_unregister_check_emptied(AcTableConfig *cfg);
extern void ac_unregister_published(AcTableConfig *cfg, AcUnregisterPub *pub);

#endif							/* ARCHIVE_CLUSTER_REPLICATION_H */
