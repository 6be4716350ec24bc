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
 *		On a publisher, a run deletes rows from the current tier and inserts
 *		them into the archive: when the current tier is published but the
 *		archive's inserts are not (a publication made before registering
 *		names the table, and the archive is new), subscribers would receive
 *		the deletes only and lose the rows.  Runs refuse then
 *		(ac_refuse_if_half_published()).
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
#include "catalog/partition.h"
#include "catalog/pg_publication.h"
#include "catalog/pg_subscription.h"
#include "catalog/pg_subscription_rel.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/relcache.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "base/guc.h"
#include "registry/replication.h"

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

/*
 * Whether relid has a row, seen by a snapshot taken now: rows committed by
 * others while we waited for the locks and this transaction's own changes
 * count.  The table as it is, without row-level security.
 */
static bool
ac_has_rows(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	Snapshot	snap;
	TableScanDesc scan;
	TupleTableSlot *slot;
	bool		found;

	CommandCounterIncrement();
	snap = RegisterSnapshot(GetLatestSnapshot());
	scan = ac_table_beginscan(rel, snap, 0, NULL);
	slot = table_slot_create(rel, NULL);
	found = table_scan_getnextslot(scan, ForwardScanDirection, slot);
	ExecDropSingleTupleTableSlot(slot);
	table_endscan(scan);
	UnregisterSnapshot(snap);
	table_close(rel, AccessShareLock);
	return found;
}

/*
 * What the publications of this database replicate of relid (all false when
 * none publishes it): FOR TABLE, FOR TABLES IN SCHEMA and FOR ALL TABLES
 * alike, as the server itself decides it (unlogged and temporary tables are
 * never published).
 */
static PublicationActions
ac_published_actions(Oid relid)
{
	Relation	rel = table_open(relid, AccessShareLock);
	PublicationDesc desc;

	RelationBuildPublicationDesc(rel, &desc);
	table_close(rel, AccessShareLock);
	return desc.pubactions;
}

static bool
ac_any_action(PublicationActions acts)
{
	return acts.pubinsert || acts.pubupdate || acts.pubdelete || acts.pubtruncate;
}

/* The name of a publication that lists relid, or NULL. */
static char *
ac_publication_of(Oid relid)
{
	List	   *pubs = ac_relation_publications(relid);
	ListCell   *lc;

	pubs = list_concat(pubs, ac_all_tables_publications(relid));
	pubs = list_concat(pubs, GetSchemaPublications(get_rel_namespace(relid)));
	foreach(lc, pubs)
	{
		char	   *name = get_publication_name(lfirst_oid(lc), true);

		if (name != NULL)
			return name;
	}
	return NULL;
}

/* 'schema.name', quoted as the table's name in a call */
static char *
ac_name_literal(Oid relid)
{
	return quote_literal_cstr(quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
														 get_rel_name(relid)));
}

/*
 * Before a run moves rows: refuse when subscribers would receive its
 * deletes from the current tier but not its inserts into the archive.
 */
void
ac_refuse_if_half_published(AcTableConfig *cfg)
{
	PublicationActions cur = ac_published_actions(cfg->current);
	PublicationActions arc;

	if (!cur.pubdelete)
		return;
	arc = ac_published_actions(cfg->archive);
	if (!arc.pubinsert)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot move rows of \"%s\": publication \"%s\" replicates deletes from \"%s\" but no inserts into \"%s\"",
						get_rel_name(cfg->relation), ac_publication_of(cfg->current),
						get_rel_name(cfg->current), get_rel_name(cfg->archive)),
				 errdetail("Subscribers would receive the moved rows' deletes only and lose the rows."),
				 errhint("Publish \"%s\" too, e.g. ALTER PUBLICATION ... ADD TABLE %s.",
						 get_rel_name(cfg->archive),
						 quote_qualified_identifier(get_namespace_name(get_rel_namespace(cfg->archive)),
													get_rel_name(cfg->archive)))));
}

/*
 * The name of a subscription that writes into leaf or a table above it, and
 * in *target that table; NULL when none does.
 */
char *
ac_leaf_subscription(Oid leaf, Oid *target)
{
	List	   *ancestors = get_partition_ancestors(leaf);
	ListCell   *lc;
	char	   *subname;

	*target = leaf;
	subname = ac_subscription_of(leaf);
	foreach(lc, ancestors)
	{
		if (subname != NULL)
			break;
		*target = lfirst_oid(lc);
		subname = ac_subscription_of(*target);
	}
	return subname;
}

/*
 * The publications that publish leaf's changes: those of the leaf and of
 * the tables above it (a publication of a partitioned table publishes its
 * partitions, under their names or its own), of their schemas, and FOR ALL
 * TABLES.
 */
static List *
ac_leaf_publications(Oid leaf)
{
	List	   *rels = lcons_oid(leaf, get_partition_ancestors(leaf));
	List	   *pubs = ac_all_tables_publications(leaf);
	ListCell   *lc;

	foreach(lc, rels)
	{
		Oid			relid = lfirst_oid(lc);

		pubs = list_concat_unique_oid(pubs, ac_relation_publications(relid));
		pubs = list_concat_unique_oid(pubs, GetSchemaPublications(get_rel_namespace(relid)));
	}
	return pubs;
}

/*
 * Before a pass rewrites a leaf partition's rows in place (as deletes and
 * inserts of the same rows, partition/leaf_pass.c): refuse when a
 * subscription writes into the leaf or a table above it (unless
 * archive_cluster.allow_on_subscriber), or when the publications of this
 * database replicate the leaf's deletes without its inserts (subscribers
 * would lose the rows) or its inserts without its deletes (they would get
 * them twice), each publication on its own (a subscriber may take one of
 * them only).  With publish_via_partition_root, the server decides this
 * from the partitioned table's publications, and so does this.
 */
void
ac_refuse_leaf_moves_lost(Oid leaf, Oid root)
{
	PublicationActions acts;
	char	   *subname = NULL;
	Oid			target = leaf;
	ListCell   *lc;

	if (!archive_cluster_allow_on_subscriber)
		subname = ac_leaf_subscription(leaf, &target);
	if (subname != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot move rows of \"%s\": \"%s\" is a logical replication target",
						get_rel_name(leaf), get_rel_name(target)),
				 errdetail("Subscription \"%s\" writes into \"%s\".", subname, get_rel_name(target)),
				 errhint("Cluster the partitions on the publisher: its passes replicate here. To move rows here anyway, a superuser can set archive_cluster.allow_on_subscriber.")));

	/* each publication on its own: its subscribers get all of a pass or none */
	foreach(lc, ac_leaf_publications(leaf))
	{
		Publication *pub = GetPublication(lfirst_oid(lc));

		if (pub->pubactions.pubinsert != pub->pubactions.pubdelete)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 pub->pubactions.pubdelete ?
					 errmsg("cannot move rows of \"%s\": publication \"%s\" replicates its deletes but not its inserts",
							get_rel_name(leaf), pub->name) :
					 errmsg("cannot move rows of \"%s\": publication \"%s\" replicates its inserts but not its deletes",
							get_rel_name(leaf), pub->name),
					 errdetail("A pass deletes each row and inserts it again; that publication's subscribers would receive half of that."),
					 errhint("Publish both inserts and deletes of \"%s\" in each of its publications, or neither.",
							 get_rel_name(root))));
	}
	/* and all of them together, as the server decides what it publishes */
	acts = ac_published_actions(leaf);
	if (acts.pubinsert != acts.pubdelete)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 acts.pubdelete ?
				 errmsg("cannot move rows of \"%s\": its publications replicate its deletes but not its inserts",
						get_rel_name(leaf)) :
				 errmsg("cannot move rows of \"%s\": its publications replicate its inserts but not its deletes",
						get_rel_name(leaf)),
				 errdetail("A pass deletes each row and inserts it again; subscribers would receive half of that."),
				 errhint("Publish both inserts and deletes of \"%s\" in each of its publications, or neither.",
						 get_rel_name(root))));
}

/*
 * Before unregistering a table, its tiers locked.  On a subscriber whose
 * archive a subscription fills and that still holds rows: refuse (the
 * publisher's unregistering moves them, as deletes and inserts that would
 * then find nothing to delete and insert every row a second time).  When
 * the archive is published, its rows must go back as deletes and inserts
 * that subscribers replay: refuse unless its deletes and the current tier's
 * inserts are published.  Fills *pub (in the current memory context): a
 * publication of either tier (then the caller warns, with
 * ac_unregister_published()), and whether the archive's rows go back as
 * deletes and inserts.
 */
void
ac_unregister_check(AcTableConfig *cfg, AcUnregisterPub *pub)
{
	char	   *subname = ac_subscription_of(cfg->archive);
	PublicationActions arc;
	PublicationActions cur;

	if (subname != NULL && !archive_cluster_allow_on_subscriber && ac_has_rows(cfg->archive))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot unregister \"%s\": subscription \"%s\" writes into its table \"%s\"",
						get_rel_name(cfg->relation), subname, get_rel_name(cfg->archive)),
				 errdetail("\"%s\" still holds rows; the publisher moves them when it unregisters its table.",
						   get_rel_name(cfg->archive)),
				 errhint("Unregister the table on the publisher first, and here once \"%s\" is empty. "
						 "To unregister here anyway, a superuser can set archive_cluster.allow_on_subscriber.",
						 get_rel_name(cfg->archive))));

	arc = ac_published_actions(cfg->archive);
	cur = ac_published_actions(cfg->current);
	pub->move = ac_any_action(arc);
	if (pub->move && (!arc.pubdelete || !cur.pubinsert))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot unregister \"%s\": its archived rows would not reach subscribers as they move",
						get_rel_name(cfg->relation)),
				 !arc.pubdelete ?
				 errdetail("Publication \"%s\" does not replicate deletes from \"%s\": subscribers would keep the rows there and receive them again.",
						   ac_publication_of(cfg->archive), get_rel_name(cfg->archive)) :
				 errdetail("\"%s\" is published without its inserts: subscribers would lose the archived rows.",
						   get_rel_name(cfg->current)),
				 errhint("Publish deletes of \"%s\" and inserts of \"%s\" (ALTER PUBLICATION ... SET (publish = 'insert, update, delete')) first.",
						 get_rel_name(cfg->archive), get_rel_name(cfg->current))));
	if (pub->move)
		pub->pubname = ac_publication_of(cfg->archive);
	else
		pub->pubname = ac_any_action(cur) ? ac_publication_of(cfg->current) : NULL;
	pub->relname = pstrdup(get_rel_name(cfg->relation));
	pub->literal = ac_name_literal(cfg->relation);
}

/*
 * After moving a published archive's rows back (the caller deleted them as
 * it copied them): refuse to drop an archive that still holds rows (a user
 * trigger or rule of the archive kept some from being deleted), which
 * would lose them.
 */
void
ac_unregister_check_emptied(AcTableConfig *cfg)
{
	if (ac_has_rows(cfg->archive))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("cannot unregister \"%s\": rows of \"%s\" were not deleted as they were moved back",
						get_rel_name(cfg->relation), get_rel_name(cfg->archive)),
				 errdetail("Something of \"%s\", such as a trigger, kept rows from being deleted; dropping the table would lose them.",
						   get_rel_name(cfg->archive)),
				 errhint("Drop or disable the DELETE triggers of \"%s\" first.", get_rel_name(cfg->archive))));
}

/*
 * After unregistering a table one of whose tiers was published: what the
 * subscribers must do.
 */
void
ac_unregister_published(AcTableConfig *cfg, AcUnregisterPub *pub)
{
	if (cfg->table_mode)
		ereport(WARNING,
				(errmsg("\"%s\" was published by \"%s\": subscribers must unregister it too", pub->relname, pub->pubname),
				 errdetail("Its archived rows were moved back as deletes and inserts, which subscribers replay."),
				 errhint("On each subscriber, once this change has arrived there, call archive_cluster_unregister(%s), "
						 "or drop its empty archive table.", pub->literal)));
	else
		ereport(WARNING,
				(errmsg("\"%s\" was published by \"%s\": subscribers must unregister it too", pub->relname, pub->pubname),
				 pub->move ?
				 errdetail("Its archived rows were moved back as deletes and inserts, which subscribers replay; "
						   "the changes of the table now arrive under the name \"%s\".", pub->relname) :
				 errdetail("The changes of the table now arrive under the name \"%s\".", pub->relname),
				 errhint("On each subscriber, once this change has arrived there, call archive_cluster_unregister(%s) "
						 "(or rename its copy of the current table to \"%s\"); until then its apply worker retries.",
						 pub->literal, pub->relname)));
}
