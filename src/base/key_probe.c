/*-------------------------------------------------------------------------
 *
 * key_probe.c
 *		Is a key in a table?  The lookup that keeps a key unique across two
 *		tables whose unique indexes each see their own rows only (the tiers
 *		of a registered table, in both modes).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/relscan.h"
#include "access/skey.h"
#include "access/table.h"
#include "access/tableam.h"
#include "executor/executor.h"
#include "executor/tuptable.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "compat.h"
#include "base/key_probe.h"

/* Equality scan keys for key values of index idx (a NULL looked for as NULL). */
static void
ac_key_scankeys(Relation idx, const Oid *eqprocs, int nkeys, Datum *keyv, bool *keyn,
				ScanKey skeys)
{
	int			i;

	for (i = 0; i < nkeys; i++)
		ScanKeyEntryInitialize(&skeys[i], keyn[i] ? SK_ISNULL | SK_SEARCHNULL : 0,
							   i + 1, BTEqualStrategyNumber, InvalidOid,
							   idx->rd_indcollation[i], eqprocs[i], keyn[i] ? (Datum) 0 : keyv[i]);
}

/*
 * Is there a row with these key values in rel (index idx)?  Scans the index
 * with a dirty snapshot, as a unique index does: a row that another
 * transaction is inserting or deleting is waited for, then looked at again,
 * so that two transactions writing one new key into the two tables at the
 * same time cannot both succeed (each writes its row first, then checks the
 * other table: the second to check sees the first one's row).  A NULL key
 * matches nothing, unless nulls_equal (a unique index NULLS NOT DISTINCT).
 * The row found is left in slot.  Modelled on
 * check_exclusion_or_unique_constraint() of PostgreSQL's
 * executor/execIndexing.c.
 */
bool
ac_key_find(Relation rel, Relation idx, const Oid *eqprocs, int nkeys,
			Datum *keyv, bool *keyn, bool nulls_equal, TupleTableSlot *slot)
{
	SnapshotData dirty;
	IndexScanDesc scan;
	ScanKeyData skeys[INDEX_MAX_KEYS];
	bool		found;
	int			i;

	for (i = 0; i < nkeys; i++)
		if (keyn[i] && !nulls_equal)
			return false;

	ac_key_scankeys(idx, eqprocs, nkeys, keyv, keyn, skeys);
	InitDirtySnapshot(dirty);
	for (;;)
	{
		TransactionId xwait;

		CHECK_FOR_INTERRUPTS();
		scan = ac_index_beginscan(rel, idx, &dirty, nkeys, 0);
		index_rescan(scan, skeys, nkeys, NULL, 0);
		found = index_getnext_slot(scan, ForwardScanDirection, slot);
		index_endscan(scan);
		if (!found)
			break;
		xwait = TransactionIdIsValid(dirty.xmin) ? dirty.xmin : dirty.xmax;
		if (!TransactionIdIsValid(xwait))
			break;				/* committed and not being deleted */
		if (dirty.speculativeToken)
			SpeculativeInsertionWait(dirty.xmin, dirty.speculativeToken);
		else
			XactLockTableWait(xwait, rel, &slot->tts_tid, XLTW_InsertIndexUnique);
	}
	return found;
}

/* ac_key_find() in table heapid, index indexid, the row not kept. */
bool
ac_key_exists(Oid heapid, Oid indexid, const Oid *eqprocs, int nkeys,
			  Datum *keyv, bool *keyn, bool nulls_equal)
{
	Relation	rel;
	Relation	idx;
	TupleTableSlot *slot;
	bool		found;
	int			i;

	for (i = 0; i < nkeys; i++)
		if (keyn[i] && !nulls_equal)
			return false;

	rel = table_open(heapid, AccessShareLock);
	idx = index_open(indexid, AccessShareLock);
	slot = table_slot_create(rel, NULL);
	found = ac_key_find(rel, idx, eqprocs, nkeys, keyv, keyn, nulls_equal, slot);
	ExecDropSingleTupleTableSlot(slot);
	/* keep the locks until the end of the transaction, as a scan would */
	index_close(idx, NoLock);
	table_close(rel, NoLock);
	return found;
}
