/*-------------------------------------------------------------------------
 *
 * unarchive.c
 *		Table mode: bring an archived row back into <t>, for an INSERT ...
 *		ON CONFLICT DO UPDATE whose conflicting row is archived.
 *
 *		ON CONFLICT finds conflicts in <t>'s own arbiter indexes only, and
 *		updates the row it finds there.  So the BEFORE trigger that
 *		on_conflict.c adds to such a statement moves the archived row with
 *		the key back into ONLY <t> (a delete from the archive marked as a
 *		move between partitions, then an insert with its index entries, as
 *		one unit of the statement's transaction); the executor then meets it
 *		in <t>'s index and updates it as it would on a plain table.  The row
 *		stays in <t> until a later run archives it again.
 *
 *		The row is written into <t> with the command id the statement had
 *		before on_conflict.c moved it one on: the executor locks and updates
 *		a row written by an earlier command, not one its own command
 *		inserted (which it would refuse as "cannot affect row a second
 *		time").  Its deletion from the archive is the statement's own, as an
 *		UPDATE's would be.  No trigger fires for the move (a run fires none
 *		either).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/tupconvert.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "base/key_probe.h"
#include "table/guard_indexes.h"
#include "table/unarchive.h"

/* 40001, as ON CONFLICT on a plain table reports a row it may not see */
static void
ac_unarchive_serialization_failure(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent update")));
}

/* For each column of cur, its column in arc (by name), 0 if dropped. */
static AttrMap *
ac_unarchive_map(Relation cur, Relation arc)
{
	TupleDesc	desc = RelationGetDescr(cur);
	AttrMap    *map = make_attrmap(desc->natts);
	int			i;

	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped)
			continue;
		map->attnums[i] = get_attnum(RelationGetRelid(arc), NameStr(att->attname));
		if (map->attnums[i] == InvalidAttrNumber)
			elog(ERROR, "column \"%s\" of \"%s\" is missing from \"%s\"",
				 NameStr(att->attname), RelationGetRelationName(cur),
				 RelationGetRelationName(arc));
	}
	return map;
}

/* Insert the archived row in arcslot into cur, with its index entries. */
static void
ac_unarchive_insert(Relation cur, Relation arc, TupleTableSlot *arcslot, CommandId cid)
{
	EState	   *estate = CreateExecutorState();
	ResultRelInfo *rri = makeNode(ResultRelInfo);
	TupleTableSlot *slot = table_slot_create(cur, NULL);
	AttrMap    *map = ac_unarchive_map(cur, arc);
	List	   *recheck;

	execute_attr_map_slot(map, arcslot, slot);
	InitResultRelInfo(rri, cur, 1, NULL, 0);
	ExecOpenIndices(rri, false);
	ac_guard_leave_out(rri);	/* the row is the archived one, not a new key */
	table_tuple_insert(cur, slot, cid, 0, NULL);
	recheck = ac_insert_index_tuples(rri, slot, estate);
	if (recheck != NIL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("deferrable unique constraints on \"%s\" are not supported",
						RelationGetRelationName(cur))));
	ExecCloseIndices(rri);
	ExecDropSingleTupleTableSlot(slot);
	free_attrmap(map);
	FreeExecutorState(estate);
}

/* 21000, as ON CONFLICT on a plain table reports a row its own command wrote */
static void
ac_unarchive_second_time(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_CARDINALITY_VIOLATION),
			 errmsg("ON CONFLICT DO UPDATE command cannot affect row a second time"),
			 errhint("Ensure that no rows proposed for insertion within the same command have duplicate constrained values.")));
}

/*
 * Move the archived row with these key values (index indexid of archive
 * archiveid) into cur: written there with command id cid, deleted from the
 * archive with cid + 1, the statement's own.  False if there is no such
 * row (any more).
 *
 * The row is locked first, then inserted into cur, then deleted: a
 * transaction inserting the key into cur meanwhile sees the archived row
 * still live (a lock does not hide it) and fails at once, as on a plain
 * table, instead of waiting for this one while this one waits for its
 * entry in cur's index.  A row updated or deleted by another transaction
 * meanwhile is looked for again (READ COMMITTED) or is a serialization
 * failure (REPEATABLE READ and SERIALIZABLE), as is a row the
 * transaction's snapshot does not see; one written by this statement
 * cannot be updated by it.
 */
bool
ac_unarchive_key(Relation cur, Oid archiveid, Oid indexid, const Oid *eqprocs, int nkeys,
				 Datum *keyv, bool *keyn, bool nulls_equal, CommandId cid)
{
	Relation	arc = table_open(archiveid, RowExclusiveLock);
	Relation	idx = index_open(indexid, AccessShareLock);
	TupleTableSlot *arcslot = table_slot_create(arc, NULL);
	bool		moved = false;

	while (ac_key_find(arc, idx, eqprocs, nkeys, keyv, keyn, nulls_equal, arcslot))
	{
		ItemPointerData tid = arcslot->tts_tid;
		TM_FailureData tmfd;
		TM_Result	res;
		bool		isnull;
		TransactionId xmin;

		res = table_tuple_lock(arc, &tid, GetActiveSnapshot(), arcslot, cid + 1,
							   LockTupleExclusive, LockWaitBlock, 0, &tmfd);
		if (res == TM_Invisible || res == TM_SelfModified)
			ac_unarchive_second_time();
		if (res == TM_Updated || res == TM_Deleted)
		{
			if (IsolationUsesXactSnapshot())
				ac_unarchive_serialization_failure();
			ExecClearTuple(arcslot);
			continue;			/* changed meanwhile: look for the key again */
		}
		if (res != TM_Ok)
			elog(ERROR, "unexpected result %d locking an archived row", (int) res);

		xmin = DatumGetTransactionId(slot_getsysattr(arcslot, MinTransactionIdAttributeNumber,
													 &isnull));
		if (IsolationUsesXactSnapshot() && !TransactionIdIsCurrentTransactionId(xmin) &&
			!table_tuple_satisfies_snapshot(arc, arcslot, GetActiveSnapshot()))
			ac_unarchive_serialization_failure();

		ac_unarchive_insert(cur, arc, arcslot, cid);
		res = ac_table_tuple_delete(arc, &tid, cid + 1, GetActiveSnapshot(), InvalidSnapshot,
									true, &tmfd, true);
		if (res != TM_Ok)
			elog(ERROR, "unexpected result %d deleting a locked archived row", (int) res);
		moved = true;
		break;
	}
	ExecDropSingleTupleTableSlot(arcslot);
	index_close(idx, NoLock);
	table_close(arc, NoLock);
	return moved;
}
