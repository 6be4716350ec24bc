/*-------------------------------------------------------------------------
 *
 * replication.c
 *		Registered tables whose tiers a logical replication subscription
 *		writes into.
 *
 *		On a subscriber the publisher's runs and compactions arrive as
 *		deletes and inserts of <t>_current's and <t>_archive's rows.  A row
 *		the subscriber moved itself is no longer where the publisher's later
 *		changes look for it: its update or delete is skipped (PostgreSQL 15
 *		says so at DEBUG1 only), and its insert into the archive fails on the
 *		row already there.  So runs and compactions leave such tables alone:
 *		the worker and archive_cluster_run() without a relation skip them,
 *		and a call naming one is refused, unless the superuser allows it
 *		(archive_cluster.allow_on_subscriber).  A tier is a target while a
 *		subscription of this database lists it in pg_subscription_rel,
 *		enabled or not.
 *
 *		Unregistering moves the archived rows back into the current tier.
 *		When the archive is published, the rows are deleted from it as they
 *		are copied, so that subscribers receive the move as deletes and
 *		inserts and keep every row once; on a subscriber, unregistering waits
 *		until the publisher's unregistering has emptied the archive
 *		(ac_unregister_check()).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/tableam.h"
#include "executor/tuptable.h"
#include "catalog/pg_publication.h"
#include "catalog/pg_subscription.h"
#include "catalog/pg_subscription_rel.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "guc.h"
#include "replication.h"

/* The name of a subscription that writes into relid, or NULL. */
static char *
ac_subscription_of(Oid relid)
{
	Relation	rel = table_open(SubscriptionRelRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;
	char	   *name = NULL;

	ScanKeyInit(&key, Anum_pg_subscription_rel_srrelid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(relid));
	scan = systable_beginscan(rel, SubscriptionRelSrrelidSrsubidIndexId, true, NULL, 1, &key);
	while (name == NULL && HeapTupleIsValid(tup = systable_getnext(scan)))
		name = get_subscription_name(((Form_pg_subscription_rel) GETSTRUCT(tup))->srsubid, true);
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return name;
}

/*
 * The name of a subscription that writes into a tier of the registered
 * table, and in *tier that tier; NULL when none does.
 */
char *
ac_subscription_into(AcTableConfig *cfg, Oid *tier)
{
	char	   *name;

	*tier = cfg->current;
	name = ac_subscription_of(cfg->current);
	if (name == NULL)
	{
		*tier = cfg->archive;
		name = ac_subscription_of(cfg->archive);
	}
	return name;
}

/*
 * Whether the worker and archive_cluster_run() or archive_cluster_compact()
 * without a relation leave this table alone: a subscription writes into a
 * tier and archive_cluster.allow_on_subscriber is off.  The caller reports
 * the skip.
 */
bool
ac_subscribed_skip(AcTableConfig *cfg)
{
	Oid			tier;

	return !archive_cluster_allow_on_subscriber && ac_subscription_into(cfg, &tier) != NULL;
}

/*
 * Refuse a run or a compaction of a table a subscription writes into
 * (unless archive_cluster.allow_on_subscriber).
 */
void
ac_refuse_if_subscribed(AcTableConfig *cfg)
{
	Oid			tier;
	char	   *subname;

	if (archive_cluster_allow_on_subscriber)
		return;
	subname = ac_subscription_into(cfg, &tier);
	if (subname != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot move rows of \"%s\": its table \"%s\" is a logical replication target",
						get_rel_name(cfg->relation), get_rel_name(tier)),
				 errdetail("Subscription \"%s\" writes into \"%s\". Rows moved here would no longer be where the publisher's later updates and deletes look for them.",
						   subname, get_rel_name(tier)),
				 errhint("Archive on the publisher: its runs and compactions replicate here. To move rows here anyway, a superuser can set archive_cluster.allow_on_subscriber.")));
}

/* Whether relid has a row this transaction sees. */
static bool
ac_has_rows(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	TableScanDesc scan = table_beginscan(rel, GetActiveSnapshot(), 0, NULL);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	bool		found = table_scan_getnextslot(scan, ForwardScanDirection, slot);

	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	table_close(rel, AccessShareLock);
	return found;
}

/* The name of a publication that publishes relid, or NULL. */
static char *
ac_publication_of(Oid relid)
{
	List	   *pubs = GetRelationPublications(relid);
	ListCell   *lc;

	pubs = list_concat(pubs, GetAllTablesPublications());
	pubs = list_concat(pubs, GetSchemaPublications(get_rel_namespace(relid)));
	foreach(lc, pubs)
	{
		char	   *name = get_publication_name(lfirst_oid(lc), true);

		if (name != NULL)
			return name;
	}
	return NULL;
}

/*
 * Before unregistering a table: on a subscriber whose archive still holds
 * rows, refuse (the publisher's unregistering moves them, as deletes and
 * inserts that would then find nothing to delete and insert every row a
 * second time).  Returns the name of a publication of the archive, or NULL:
 * then the rows are copied back without deleting them first.
 */
char *
ac_unregister_check(AcTableConfig *cfg)
{
	Oid			tier;
	char	   *subname = ac_subscription_into(cfg, &tier);

	if (subname != NULL && !archive_cluster_allow_on_subscriber && ac_has_rows(cfg->archive))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot unregister \"%s\": subscription \"%s\" writes into its table \"%s\"",
						get_rel_name(cfg->relation), subname, get_rel_name(tier)),
				 errdetail("\"%s\" still holds rows; the publisher moves them when it unregisters its table.",
						   get_rel_name(cfg->archive)),
				 errhint("Unregister the table on the publisher first, and here once \"%s\" is empty.",
						 get_rel_name(cfg->archive))));
	return ac_publication_of(cfg->archive);
}

/*
 * After unregistering a table whose archive was published: what the
 * subscribers must do.
 */
void
ac_unregister_published(AcTableConfig *cfg, const char *relname, const char *pubname)
{
	if (cfg->table_mode)
		ereport(WARNING,
				(errmsg("\"%s\" was published by \"%s\": subscribers must unregister it too", relname, pubname),
				 errdetail("Its archived rows were moved back as deletes and inserts, which subscribers replay."),
				 errhint("On each subscriber, once this change has arrived there, call archive_cluster_unregister('%s'), "
						 "or drop its empty archive table.", relname)));
	else
		ereport(WARNING,
				(errmsg("\"%s\" was published by \"%s\": subscribers must unregister it too", relname, pubname),
				 errdetail("Its archived rows were moved back as deletes and inserts, which subscribers replay; "
						   "the changes of the table now arrive under the name \"%s\".", relname),
				 errhint("On each subscriber, once this change has arrived there, call archive_cluster_unregister('%s') "
						 "(or rename its copy of the current table to \"%s\"); until then its apply worker retries.",
						 relname, relname)));
}
