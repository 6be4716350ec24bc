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
 *		The rows are written with the command id the statement had before
 *		on_conflict.c moved it one on: the executor locks and updates a row
 *		written by an earlier command, not one its own command inserted
 *		(which it would refuse as "cannot affect row a second time").
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/attmap.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "key_probe.h"
#include "unarchive.h"

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

/*
 * Move the archived row with these key values (index indexid of archive
 * archiveid) into cur, written with command id cid.  False if there is no
 * such row (any more).  A row deleted or updated meanwhile by another
 * transaction is looked for again (READ COMMITTED) or is a serialization
 * failure (REPEATABLE READ and SERIALIZABLE), as is a row the transaction's
 * snapshot does not see.
 */
bool
ac_unarchive_key(Relation cur, Oid archiveid, Oid indexid, const Oid *eqprocs, int nkeys,
				 Datum *keyv, bool *keyn, bool nulls_equal, CommandId cid)
{
	Relation	arc = table_open(archiveid, RowExclusiveLock);
	Relation	idx = index_open(indexid, RowExclusiveLock);
	TupleTableSlot *arcslot = table_slot_create(arc, NULL);
	bool		moved = false;

	while (ac_key_find(arc, idx, eqprocs, nkeys, keyv, keyn, nulls_equal, arcslot))
	{
		TM_FailureData tmfd;
		TM_Result	res;

		if (IsolationUsesXactSnapshot() &&
			!table_tuple_satisfies_snapshot(arc, arcslot, GetActiveSnapshot()))
			ac_unarchive_serialization_failure();
		res = table_tuple_delete(arc, &arcslot->tts_tid, cid, GetActiveSnapshot(),
								 InvalidSnapshot, true, &tmfd, true);
		if (res == TM_Ok)
		{
			/* the version deleted is the one found, still in arcslot */
			ac_unarchive_insert(cur, arc, arcslot, cid);
			moved = true;
			break;
		}
		if (res == TM_SelfModified)
			ereport(ERROR,
					(errcode(ERRCODE_TRIGGERED_DATA_CHANGE_VIOLATION),
					 errmsg("archived row to be updated was already modified by an operation triggered by the current command")));
		if (res != TM_Updated && res != TM_Deleted)
			elog(ERROR, "unexpected result %d deleting an archived row", (int) res);
		if (IsolationUsesXactSnapshot())
			ac_unarchive_serialization_failure();
		/* changed meanwhile: look for the key again */
		ExecClearTuple(arcslot);
	}
	ExecDropSingleTupleTableSlot(arcslot);
	index_close(idx, NoLock);
	table_close(arc, NoLock);
	return moved;
}
