/*-------------------------------------------------------------------------
 *
 * view_direct.c
 *		The view's direct writes: INSERT and UPDATE of a row of <t>_current
 *		straight on the table and its indexes (constraints checked), in
 *		place of a prepared statement, when the trigger's fast path allows.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/relscan.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_operator.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "archive_cluster.h"
#include "compat.h"
#include "view/view_cache.h"
#include "view/view_direct.h"
#include "registry/tiers.h"

/*
 * INSERT a row of the view straight into <t>_current: constraints, heap,
 * indexes, as an INSERT statement would for a table without triggers.
 * Returns false (and does nothing) when the caller lacks the table-level
 * INSERT privilege: the prepared statement then decides, with the usual
 * column-level checks and errors.
 */
bool
ac_direct_insert(AcTriggerEntry *e, Datum *viewv, bool *viewn)
{
	Relation	rel = table_open(e->current, RowExclusiveLock);
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot *slot;
	int			i;

	ac_check_shape(RelationGetDescr(rel)->natts == e->cur_natts, "current table");
	if (pg_class_aclcheck(e->current, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
	{
		table_close(rel, NoLock);
		return false;
	}

	estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 0, NULL, 0);
	ExecOpenIndices(rri, false);
	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
	ExecClearTuple(slot);
	for (i = 0; i < e->cur_natts; i++)
	{
		int			v = e->cur_from_view[i];

		slot->tts_values[i] = v >= 0 ? viewv[v] : (Datum) 0;
		slot->tts_isnull[i] = v >= 0 ? viewn[v] : true;
	}
	ExecStoreVirtualTuple(slot);

	if (rel->rd_att->constr)
		ExecConstraints(rri, slot, estate);
	table_tuple_insert(rel, slot, GetCurrentCommandId(true), 0, NULL);
	if (rri->ri_NumIndices > 0)
		(void) ac_insert_index_tuples(rri, slot, estate);

	ExecDropSingleTupleTableSlot(slot);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	return true;
}

/*
 * UPDATE a row of <t>_current directly, in place of the prepared UPDATE,
 * when it is simple: the caller holds UPDATE and SELECT on the table, the
 * row is found by its key (with the statement's snapshot), it is still
 * exactly the row the statement read (compared as *= does) and no one has
 * changed it since.
 * Then constraints, heap and indexes, as an UPDATE statement would for a
 * table without triggers; like it, this waits for another transaction
 * changing the row.  When that one committed a change (or the row is not
 * there, or differs), returns false having changed nothing, and the
 * prepared statements decide, with their waits and 40001s.
 */
bool
ac_direct_update(AcTriggerEntry *e, Datum *oldv, bool *oldn, Datum *newv, bool *newn)
{
	Relation	rel;
	Relation	idx;
	IndexScanDesc scan;
	ScanKeyData skeys[INDEX_MAX_KEYS];
	Snapshot	snapshot;
	TupleTableSlot *oldslot;
	TupleTableSlot *newslot;
	EState	   *estate;
	ResultRelInfo *rri;
	TM_FailureData tmfd;
	LockTupleMode lockmode;
	AcUpdateIndexes update_indexes;
	TM_Result	res = TM_Invisible;
	bool		pushed = false;
	bool		same;
	int			i;

	for (i = 0; i < e->nkeys; i++)
		if (oldn[e->keycols[i]])
			return false;
	if (pg_class_aclmask(e->current, GetUserId(), ACL_UPDATE | ACL_SELECT,
						 ACLMASK_ALL) != (ACL_UPDATE | ACL_SELECT))
		return false;

	rel = table_open(e->current, RowExclusiveLock);
	ac_check_shape(RelationGetDescr(rel)->natts == e->cur_natts, "current table");
	idx = index_open(e->keyindex[0], AccessShareLock);
	for (i = 0; i < e->nkeys; i++)
		ScanKeyEntryInitialize(&skeys[i], 0, i + 1, BTEqualStrategyNumber, InvalidOid,
							   idx->rd_indcollation[i], e->keyeqproc[0][i],
							   oldv[e->keycols[i]]);

	/*
	 * The row as the statement read it, with the statement's snapshot: a
	 * version committed since, or changed by this command, makes the update
	 * below fail (TM_Updated, TM_SelfModified), and the prepared statements
	 * decide with a new snapshot, as they would have.  Once a prepared
	 * statement of this statement has run (a new command), the snapshot
	 * sees this statement's earlier writes, as theirs would: else a row it
	 * wrote over would look invisible to the update.
	 */
	snapshot = GetActiveSnapshot();
	if (snapshot->curcid != GetCurrentCommandId(false))
	{
		PushCopiedSnapshot(snapshot);
		UpdateActiveSnapshotCommandId();
		snapshot = GetActiveSnapshot();
		pushed = true;
	}

	oldslot = table_slot_create(rel, NULL);
	scan = ac_index_beginscan(rel, idx, snapshot, e->nkeys, 0);
	index_rescan(scan, skeys, e->nkeys, NULL, 0);
	same = index_getnext_slot(scan, ForwardScanDirection, oldslot);
	index_endscan(scan);
	if (same)
	{
		slot_getallattrs(oldslot);
		for (i = 0; i < e->cur_natts && same; i++)
		{
			int			v = e->cur_from_view[i];

			if (v >= 0)
				same = oldslot->tts_isnull[i] == oldn[v] &&
					(oldn[v] || datum_image_eq(oldslot->tts_values[i], oldv[v],
											   e->typbyvals[v], e->typlens[v]));
		}
	}

	if (same)
	{
		newslot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
		ExecClearTuple(newslot);
		for (i = 0; i < e->cur_natts; i++)
		{
			int			v = e->cur_from_view[i];

			if (v < 0)
			{
				newslot->tts_values[i] = (Datum) 0;
				newslot->tts_isnull[i] = true;
			}
			else if (!e->cur_settable[v])
			{
				newslot->tts_values[i] = oldslot->tts_values[i];
				newslot->tts_isnull[i] = oldslot->tts_isnull[i];
			}
			else
			{
				newslot->tts_values[i] = newv[v];
				newslot->tts_isnull[i] = newn[v];
			}
		}
		ExecStoreVirtualTuple(newslot);

		estate = CreateExecutorState();
		rri = makeNode(ResultRelInfo);
		InitResultRelInfo(rri, rel, 0, NULL, 0);
		CheckCmdReplicaIdentity(rel, CMD_UPDATE);
		ExecOpenIndices(rri, false);
		if (rel->rd_att->constr)
			ExecConstraints(rri, newslot, estate);
		res = ac_table_tuple_update(rel, &oldslot->tts_tid, newslot,
									GetCurrentCommandId(true), snapshot, InvalidSnapshot,
									true, &tmfd, &lockmode, &update_indexes);
		if (res == TM_Ok && rri->ri_NumIndices > 0 &&
			ac_update_needs_indexes(update_indexes))
			(void) ac_insert_index_tuples_update(rri, newslot, estate,
												 ac_update_only_summarizing(update_indexes));
		ExecDropSingleTupleTableSlot(newslot);
		ExecCloseIndices(rri);
		FreeExecutorState(estate);
	}

	ExecDropSingleTupleTableSlot(oldslot);
	if (pushed)
		PopActiveSnapshot();
	index_close(idx, NoLock);
	table_close(rel, NoLock);
	return res == TM_Ok;
}

