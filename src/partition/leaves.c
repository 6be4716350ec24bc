/*-------------------------------------------------------------------------
 *
 * leaves.c
 *		The leaf partitions of a registered partitioned table, found from it
 *		at every call (so partitions created or dropped since need no call),
 *		and which are closed: every row older than the hot window, so that
 *		no row will be inserted there in the normal course and a pass may
 *		cluster it.  A leaf is closed
 *		- by its bound: range partitioned by the age column first, its
 *		  upper bound is at most now() less the hot window;
 *		- by a parent's bound, the same one level up or more (a leaf of a
 *		  sub-partitioned table);
 *		- by its rows: it has an index led by the age column, and no row
 *		  newer than that, read backwards from that index (a DEFAULT
 *		  partition, one partitioned by another column).
 *		The partition tree is read from the catalogs without locks: a pass
 *		must not hold a lock on the partitioned table or on a leaf it does
 *		not work on, or a DROP or DETACH of another leaf would wait for it.
 *		Only the check of a leaf's rows locks the leaf and its index (ACCESS
 *		SHARE, when granted at once, and let go of at once).
 *
 *		archive_cluster_partitions(relation): the leaves, their bounds, and
 *		what the passes did to each (archive_cluster_leaves).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/partition.h"
#include "catalog/pg_am_d.h"
#include "catalog/pg_index.h"
#include "catalog/pg_partitioned_table.h"
#include "catalog/pg_type_d.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/snapmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/tuplestore.h"

#include "compat.h"
#include "base/util.h"
#include "partition/leaves.h"
#include "registry/partitioned.h"

PG_FUNCTION_INFO_V1(archive_cluster_partitions);

const char *
ac_closed_by_name(AcClosedBy closed_by)
{
	switch (closed_by)
	{
		case AC_CLOSED_BY_BOUND:
			return "bound";
		case AC_CLOSED_BY_PARENT:
			return "parent's bound";
		case AC_CLOSED_BY_ROWS:
			return "rows";
		case AC_OPEN:
			break;
	}
	return NULL;
}

/* now() less the hot window */
static TimestampTz
ac_cutoff(AcPartitionedConfig *cfg)
{
	return DatumGetTimestampTz(DirectFunctionCall2(timestamptz_mi_interval,
												   TimestampTzGetDatum(GetCurrentTransactionStartTimestamp()),
												   IntervalPGetDatum(&cfg->hot_window)));
}

/* The partition bound of rel, or NULL (not a partition: detached meanwhile). */
static PartitionBoundSpec *
ac_partition_bound(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	PartitionBoundSpec *spec = NULL;
	Datum		d;
	bool		isnull;

	if (!HeapTupleIsValid(tup))
		return NULL;
	d = SysCacheGetAttr(RELOID, tup, Anum_pg_class_relpartbound, &isnull);
	if (!isnull)
	{
		Node	   *node = stringToNode(TextDatumGetCString(d));

		if (IsA(node, PartitionBoundSpec))
			spec = (PartitionBoundSpec *) node;
	}
	ReleaseSysCache(tup);
	return spec;
}

/*
 * Does child's bound in parent hold only rows older than cutoff: parent is
 * range partitioned with the age column first, and child's upper bound on
 * it is at most the cutoff (below it, when more columns follow)?
 */
static bool
ac_bound_closed(AcPartitionedConfig *cfg, Oid parent, Oid child, TimestampTz cutoff)
{
	HeapTuple	tup = SearchSysCache1(PARTRELID, ObjectIdGetDatum(parent));
	Form_pg_partitioned_table form;
	bool		closed = false;
	char	   *attname;
	PartitionBoundSpec *spec;
	PartitionRangeDatum *upper;
	Const	   *c;
	Timestamp	cut;

	if (!HeapTupleIsValid(tup))
		return false;
	form = (Form_pg_partitioned_table) GETSTRUCT(tup);
	if (form->partstrat != 'r' || form->partattrs.values[0] == 0 ||
		(attname = get_attname(parent, form->partattrs.values[0], true)) == NULL ||
		strcmp(attname, cfg->age_column) != 0 ||
		(spec = ac_partition_bound(child)) == NULL || spec->is_default ||
		spec->upperdatums == NIL)
	{
		ReleaseSysCache(tup);
		return false;
	}
	upper = linitial_node(PartitionRangeDatum, spec->upperdatums);
	if (upper->kind == PARTITION_RANGE_DATUM_MINVALUE)
		closed = true;
	else if (upper->kind == PARTITION_RANGE_DATUM_VALUE && IsA(upper->value, Const) &&
			 !(c = (Const *) upper->value)->constisnull &&
			 (c->consttype == TIMESTAMPTZOID || c->consttype == TIMESTAMPOID))
	{
		cut = c->consttype == TIMESTAMPTZOID ? cutoff :
			DatumGetTimestamp(DirectFunctionCall1(timestamptz_timestamp,
												  TimestampTzGetDatum(cutoff)));
		if (form->partnatts == 1)
			closed = DatumGetTimestamp(c->constvalue) <= cut;
		else
			closed = DatumGetTimestamp(c->constvalue) < cut;
	}
	ReleaseSysCache(tup);
	return closed;
}

/*
 * AccessShareLock on relid if granted at once; ac_release_share() lets go
 * of it (a lock this transaction held already stays: the lock manager
 * counts each taking).  The check of a leaf's rows runs in a run's or the
 * worker's transaction, where a lock kept until commit on a leaf it does
 * not pass would make a DROP, DETACH or a CREATE ... PARTITION OF (which
 * locks the DEFAULT partition) wait for the whole run, unseen by its checks
 * for waiters.
 */
static bool
ac_try_share(Oid relid)
{
	return ConditionalLockRelationOid(relid, AccessShareLock);
}

static void
ac_release_share(Oid relid)
{
	UnlockRelationOid(relid, AccessShareLock);
}

/*
 * Is index a valid btree index led by the age column, ascending, without
 * predicate, of the column type's default operator class (its functions are
 * PostgreSQL's, not code of the table's owner that the caller would run)?
 */
static bool
ac_is_age_index(Relation index, Relation rel, const char *age_column)
{
	Form_pg_index ix = index->rd_index;
	Oid			opclass;

	if (index->rd_rel->relam != BTREE_AM_OID || ix->indkey.values[0] <= 0)
		return false;
	opclass = GetDefaultOpClass(index->rd_opcintype[0], BTREE_AM_OID);
	return ix->indisvalid && OidIsValid(opclass) &&
		get_opclass_family(opclass) == index->rd_opfamily[0] &&
		(index->rd_indoption[0] & INDOPTION_DESC) == 0 &&
		heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL) &&
		strcmp(NameStr(TupleDescAttr(RelationGetDescr(rel), ix->indkey.values[0] - 1)->attname),
			   age_column) == 0;
}

/*
 * Is the newest age of rel's rows (read backwards from its age index, NULLs
 * left out, with this transaction's snapshot) before cutoff?  True when it
 * has no row.
 */
static bool
ac_newest_before(Relation rel, Relation index, TimestampTz cutoff)
{
	AttrNumber	attno = index->rd_index->indkey.values[0];
	Oid			typid = getBaseType(TupleDescAttr(RelationGetDescr(rel), attno - 1)->atttypid);
	Snapshot	snapshot = RegisterSnapshot(GetTransactionSnapshot());
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	ScanKeyData key;
	IndexScanDesc scan;
	bool		closed = true;

	ScanKeyEntryInitialize(&key, SK_ISNULL | SK_SEARCHNOTNULL, 1, InvalidStrategy,
						   InvalidOid, InvalidOid, InvalidOid, (Datum) 0);
	scan = ac_index_beginscan(rel, index, snapshot, 1, 0);
	index_rescan(scan, &key, 1, NULL, 0);
	if (index_getnext_slot(scan, BackwardScanDirection, slot))
	{
		bool		isnull;
		Datum		newest = slot_getattr(slot, attno, &isnull);
		Timestamp	cut = typid == TIMESTAMPOID ?
			DatumGetTimestamp(DirectFunctionCall1(timestamptz_timestamp, TimestampTzGetDatum(cutoff))) :
			cutoff;

		closed = !isnull && DatumGetTimestamp(newest) < cut;
	}
	index_endscan(scan);
	ExecDropSingleTupleTableSlot(slot);
	UnregisterSnapshot(snapshot);
	return closed;
}

/*
 * Does leaf hold no row at or after cutoff, read from an index led by the
 * age column?  False when it has no such index, another owner than the
 * partitioned table, or a lock on it or its index is not granted at once;
 * the locks taken here are let go of at once.  No user code runs (a btree
 * of timestamps), and no row-level security applies.
 */
static bool
ac_rows_closed(AcPartitionedConfig *cfg, Oid leaf, TimestampTz cutoff)
{
	Relation	rel;
	List	   *indexes;
	ListCell   *lc;
	bool		found = false;
	bool		closed = false;

	/* locked first: a leaf dropped meanwhile (retention) is not an error */
	if (!ac_try_share(leaf))
		return false;
	rel = try_relation_open(leaf, NoLock);
	if (rel == NULL || rel->rd_rel->relowner != ac_relation_owner(cfg->relation))
	{
		if (rel != NULL)
			relation_close(rel, NoLock);
		ac_release_share(leaf);
		return false;
	}
	indexes = rel->rd_rel->relkind == RELKIND_RELATION ? RelationGetIndexList(rel) : NIL;
	foreach(lc, indexes)
	{
		Oid			indexid = lfirst_oid(lc);
		Relation	index;

		if (!ac_try_share(indexid))
			continue;
		/* dropped (DROP INDEX CONCURRENTLY) since the list was read */
		if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(indexid)))
		{
			ac_release_share(indexid);
			continue;
		}
		index = index_open(indexid, NoLock);
		if (ac_is_age_index(index, rel, cfg->age_column))
		{
			found = true;
			closed = ac_newest_before(rel, index, cutoff);
		}
		index_close(index, NoLock);
		ac_release_share(indexid);
		if (found)
			break;
	}
	relation_close(rel, NoLock);
	ac_release_share(leaf);
	return closed;
}

/*
 * Is leaf closed, and by what: its bound, a parent's, or (with check_rows)
 * its rows?  AC_OPEN if none says so, or it is no longer in the tree.
 */
AcClosedBy
ac_leaf_closed(AcPartitionedConfig *cfg, Oid leaf, bool check_rows)
{
	TimestampTz cutoff = ac_cutoff(cfg);
	Oid			child = leaf;
	int			depth = 0;

	while (child != cfg->relation)
	{
		List	   *parents;
		Oid			parent;

		if (!get_rel_relispartition(child))
			return AC_OPEN;
		parents = get_partition_ancestors(child);
		if (parents == NIL)
			return AC_OPEN;
		parent = linitial_oid(parents);
		if (ac_bound_closed(cfg, parent, child, cutoff))
			return depth == 0 ? AC_CLOSED_BY_BOUND : AC_CLOSED_BY_PARENT;
		child = parent;
		depth++;
	}
	if (check_rows && ac_rows_closed(cfg, leaf, cutoff))
		return AC_CLOSED_BY_ROWS;
	return AC_OPEN;
}

/* Is relid a table of the heap access method (not dropped meanwhile)? */
static bool
ac_is_heap(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	bool		heap;

	if (!HeapTupleIsValid(tup))
		return false;
	heap = ((Form_pg_class) GETSTRUCT(tup))->relam == HEAP_TABLE_AM_OID;
	ReleaseSysCache(tup);
	return heap;
}

/*
 * The leaves of cfg's partitioned table (AcLeaf, closed_by not set), from
 * pg_inherits without locks, in the order of their OIDs: the partitions of
 * the heap access method (not foreign tables, nor tables of another).
 */
List *
ac_partition_leaves(AcPartitionedConfig *cfg)
{
	List	   *parents = list_make1_oid(cfg->relation);
	List	   *result = NIL;
	ListCell   *lc;

	foreach(lc, parents)
	{
		Oid			parent = lfirst_oid(lc);
		List	   *children = find_inheritance_children(parent, NoLock);
		ListCell   *cc;

		foreach(cc, children)
		{
			Oid			child = lfirst_oid(cc);
			char		relkind = get_rel_relkind(child);

			if (relkind == RELKIND_PARTITIONED_TABLE)
				parents = lappend_oid(parents, child);
			else if (relkind == RELKIND_RELATION && ac_is_heap(child))
			{
				AcLeaf	   *l = palloc0(sizeof(AcLeaf));

				l->leaf = child;
				l->parent = parent;
				result = lappend(result, l);
			}
		}
	}
	return result;
}

/*
 * archive_cluster_partitions(relation regclass): one row per leaf partition
 * of a registered partitioned table the caller owns.
 */
Datum
archive_cluster_partitions(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid = PG_GETARG_OID(0);
	AcPartitionedConfig cfg;
	List	   *leaves;
	ListCell   *lc;

	ac_check_relation_exists(relid);
	if (!ac_load_partitioned(relid, &cfg))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("relation \"%s\" is not registered as a partitioned table with archive_cluster",
						get_rel_name(relid)),
				 errhint("Register it with archive_cluster_register(..., mode => 'partitioned').")));
	ac_check_owner(relid);
	InitMaterializedSRF(fcinfo, 0);
	leaves = ac_partition_leaves(&cfg);
	foreach(lc, leaves)
	{
		AcLeaf	   *l = lfirst(lc);
		Datum		values[11];
		bool		nulls[11];
		AcLeafState st;
		AcClosedBy	closed_by;
		Relation	rel;
		PartitionBoundSpec *spec;
		HeapTuple	tup;

		CHECK_FOR_INTERRUPTS();
		memset(nulls, 0, sizeof(nulls));
		closed_by = ac_leaf_closed(&cfg, l->leaf, true);
		values[0] = ObjectIdGetDatum(l->leaf);
		values[1] = ObjectIdGetDatum(l->parent);
		nulls[2] = true;
		tup = SearchSysCache1(RELOID, ObjectIdGetDatum(l->leaf));
		spec = ac_partition_bound(l->leaf);
		if (HeapTupleIsValid(tup))
		{
			bool		isnull;
			Datum		d = SysCacheGetAttr(RELOID, tup, Anum_pg_class_relpartbound, &isnull);

			if (!isnull && spec != NULL)
			{
				values[2] = DirectFunctionCall2(pg_get_expr, d, ObjectIdGetDatum(l->leaf));
				nulls[2] = false;
			}
			ReleaseSysCache(tup);
		}
		values[3] = BoolGetDatum(closed_by != AC_OPEN);
		if (closed_by != AC_OPEN)
			values[4] = CStringGetTextDatum(ac_closed_by_name(closed_by));
		else
			nulls[4] = true;
		rel = try_relation_open(l->leaf, AccessShareLock);
		if (rel != NULL)
		{
			values[5] = Int64GetDatum((int64) RelationGetNumberOfBlocks(rel));
			relation_close(rel, AccessShareLock);
		}
		else
			nulls[5] = true;
		ac_leaf_state(l->leaf, &st);
		values[6] = Int32GetDatum(st.passes);
		values[7] = Int64GetDatum(st.rows_rewritten);
		values[8] = TimestampTzGetDatum(st.last_pass_at);
		nulls[8] = st.last_pass_at == 0;
		values[9] = TimestampTzGetDatum(st.settled_at);
		nulls[9] = st.settled_at == 0;
		values[10] = BoolGetDatum(st.resume_at != NULL);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}
	return (Datum) 0;
}
