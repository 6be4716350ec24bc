/*-------------------------------------------------------------------------
 *
 * register_partitioned.c
 *		archive_cluster_register(..., mode => 'partitioned') and its
 *		unregister: a partitioned table is registered as it is.  Nothing is
 *		renamed, created or changed in its catalogs, and the lock is SHARE
 *		UPDATE EXCLUSIVE (as ANALYZE's), so the application goes on
 *		meanwhile.  Its leaf partitions are found from it at every pass
 *		(partition/leaves.c), so partitions created or dropped later need no
 *		call; each is clustered in place (partition/leaf_pass.c).
 *
 *		What a pass needs is checked here once: the cluster columns and the
 *		age column, NOT NULL, and a valid btree index in the cluster key's
 *		order on the partitioned table, which PostgreSQL then keeps on every
 *		partition, present and future.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "admin/register_partitioned.h"
#include "admin/settings.h"
#include "base/cluster_index.h"
#include "base/util.h"
#include "registry/config.h"
#include "registry/partitioned.h"

/* Take SHARE UPDATE EXCLUSIVE on relid, waiting at most timeout_ms. */
static void
ac_lock_partitioned(Oid relid, int timeout_ms)
{
	if (!ac_lock_relation_bounded(relid, ShareUpdateExclusiveLock, timeout_ms))
		ereport(ERROR,
				(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
				 errmsg("could not lock partitioned table \"%s\" within lock_timeout",
						get_rel_name(relid)),
				 errhint("Another session holds a conflicting lock on it; try again, or pass a longer lock_timeout.")));
}

/* The requirements on the partitioned table; rel is locked. */
static void
ac_check_partitioned(Relation rel, char **cluster_by, int ncluster, const char *age_column)
{
	const char *relname = RelationGetRelationName(rel);

	if (rel->rd_rel->relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a partitioned table", relname),
				 errhint("Register a plain table with mode => 'view' or mode => 'table'.")));
	if (rel->rd_rel->relispartition)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot register partition \"%s\"", relname),
				 errhint("Register the partitioned table at the top of its partition tree.")));
	if (rel->rd_rel->relpersistence != RELPERSISTENCE_PERMANENT)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot register temporary table \"%s\"", relname),
				 errhint("Only permanent tables can be registered.")));
	ac_check_cluster_columns(rel, cluster_by, ncluster);
	ac_check_age_column(rel, age_column);
	if (!OidIsValid(ac_cluster_index(rel, cluster_by, ncluster)))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("partitioned table \"%s\" has no valid btree index in the order of cluster_by",
						relname),
				 errdetail("A pass reads each partition's rows in the order of that index."),
				 errhint("Create one on the partitioned table, e.g. CREATE INDEX ON %s (%s, ...), with its columns ascending.",
						 quote_identifier(relname), quote_identifier(cluster_by[0]))));
}

/*
 * Register the partitioned table relid (owned by the caller, checked by
 * archive_cluster_register(), which is connected to SPI).
 */
void
ac_register_partitioned(Oid relid, ArrayType *cluster_by_arr, char **cluster_by, int ncluster,
						const char *age_column, Interval *hot_window, int timeout_ms)
{
	AcPartitionedConfig cfg;
	Relation	rel;

	if (!ac_partitioned_available())
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("registering a partitioned table needs archive_cluster 1.1 in this database"),
				 errhint("Run ALTER EXTENSION archive_cluster UPDATE.")));
	ac_lock_partitioned(relid, timeout_ms);
	/* under the lock: an owner change or a registration that committed meanwhile */
	ac_check_owner(relid);
	if (ac_load_partitioned(relid, &cfg))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("relation \"%s\" is already registered with archive_cluster",
						get_rel_name(relid))));
	rel = relation_open(relid, NoLock);
	ac_check_partitioned(rel, cluster_by, ncluster, age_column);
	relation_close(rel, NoLock);
	ac_record_partitioned(relid, cluster_by_arr, age_column, hot_window, GetUserId());
}

/*
 * Unregister relid if it is a registered partitioned table: forget it and
 * its leaves' state (their rows stay where the passes put them).  False if
 * it is not one.  The caller is connected to SPI.
 */
bool
ac_unregister_partitioned(Oid relid, int timeout_ms)
{
	AcPartitionedConfig cfg;

	if (!ac_load_partitioned(relid, &cfg))
		return false;
	ac_check_owner(relid);
	ac_lock_partitioned(relid, timeout_ms);
	ac_check_owner(relid);
	ac_forget_partitioned(relid);
	return true;
}
