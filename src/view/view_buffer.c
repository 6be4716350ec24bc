/*-------------------------------------------------------------------------
 *
 * view_buffer.c
 *		INSERTs through a registered view written in batches: rows of one
 *		view and (sub)transaction level are kept and written together with
 *		multi-inserts when AC_INSERT_BATCH are there and at the end of the
 *		statement (archive_cluster_view_flush(), the view's AFTER INSERT FOR
 *		EACH STATEMENT trigger), as COPY into a table does; dropped when
 *		their level aborts.
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
#include "base/key_probe.h"
#include "view/view_buffer.h"
#include "view/view_cache.h"
#include "view/view_keys.h"
#include "registry/tiers.h"

PG_FUNCTION_INFO_V1(archive_cluster_view_flush);

/* rows of INSERTs through a view written together */
#define AC_INSERT_BATCH 1000

/* ---- INSERTs written in batches ---- */

typedef struct AcInsertBuffer
{
	Oid			view;
	char		viewname[NAMEDATALEN];
	Oid			current;
	Oid			archive;
	Oid			arc_keyindex;
	Oid			arc_keyeqproc[INDEX_MAX_KEYS];
	int			nkeys;
	AttrNumber	keycur[INDEX_MAX_KEYS];
	int			nestlevel;		/* (sub)transaction level of the rows */
	TupleDesc	desc;			/* of current, not reference-counted */
	int			nrows;
	HeapTuple	rows[AC_INSERT_BATCH];
	MemoryContext cxt;			/* holds this struct and the rows */
} AcInsertBuffer;

/* the buffers of the running statements, at most one per view and level */
static List *ac_buffers = NIL;	/* cells in TopTransactionContext */
static bool ac_buffer_callbacks = false;

static AcInsertBuffer *
ac_buffer_find(Oid view, int nestlevel)
{
	ListCell   *lc;

	foreach(lc, ac_buffers)
	{
		AcInsertBuffer *buf = lfirst(lc);

		if (buf->view == view && buf->nestlevel == nestlevel)
			return buf;
	}
	return NULL;
}

/*
 * The largest key in the archive's key index (any entry, visible or not),
 * for a one-column key: rows with a larger key need no probe.  False when
 * the key has more columns or the index is empty.
 */
static bool
ac_archive_max_key(AcInsertBuffer *buf, Datum *maxkey, FmgrInfo *cmp, Oid *collation)
{
	Relation	rel;
	Relation	idx;
	IndexScanDesc scan;
	ItemPointer tid;
	bool		found = false;

	if (buf->nkeys != 1)
		return false;
	rel = table_open(buf->archive, AccessShareLock);
	idx = index_open(buf->arc_keyindex, AccessShareLock);
	scan = ac_index_beginscan(rel, idx, SnapshotAny, 0, 0);
	scan->xs_want_itup = true;
	index_rescan(scan, NULL, 0, NULL, 0);
	tid = index_getnext_tid(scan, BackwardScanDirection);
	if (tid != NULL && scan->xs_itup != NULL)
	{
		bool		isnull;
		Datum		d = index_getattr(scan->xs_itup, 1, scan->xs_itupdesc, &isnull);
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(idx), 0);

		if (!isnull)
		{
			*maxkey = datumCopy(d, att->attbyval, att->attlen);
			fmgr_info_copy(cmp, index_getprocinfo(idx, 1, BTORDER_PROC), CurrentMemoryContext);
			*collation = idx->rd_indcollation[0];
			found = true;
		}
	}
	index_endscan(scan);
	index_close(idx, NoLock);
	table_close(rel, NoLock);
	return found;
}

/*
 * Write the buffered rows: constraints, multi-insert, indexes, key check.
 * Called at the (sub)transaction level of the rows.
 */
static void
ac_buffer_flush(AcInsertBuffer *buf)
{
	Relation	rel;
	EState	   *estate;
	ResultRelInfo *rri;
	TupleTableSlot **slots;
	CommandId	cid;
	bool		have_max;
	Datum		maxkey;
	FmgrInfo	cmp;
	Oid			collation;
	int			i;
	int			k;

	if (buf == NULL)
		return;
	/* forget it first: an error below drops the rows with their (sub)transaction */
	ac_buffers = list_delete_ptr(ac_buffers, buf);
	if (buf->nrows == 0)
	{
		MemoryContextDelete(buf->cxt);
		return;
	}

	rel = table_open(buf->current, RowExclusiveLock);
	ac_check_shape(RelationGetDescr(rel)->natts == buf->desc->natts, "current table");
	estate = CreateExecutorState();
	rri = makeNode(ResultRelInfo);
	InitResultRelInfo(rri, rel, 0, NULL, 0);
	ExecOpenIndices(rri, false);
	slots = palloc(sizeof(TupleTableSlot *) * buf->nrows);
	for (i = 0; i < buf->nrows; i++)
	{
		slots[i] = MakeSingleTupleTableSlot(buf->desc, &TTSOpsHeapTuple);
		ExecStoreHeapTuple(buf->rows[i], slots[i], false);
		if (rel->rd_att->constr)
			ExecConstraints(rri, slots[i], estate);
	}
	cid = GetCurrentCommandId(true);
	table_multi_insert(rel, slots, buf->nrows, cid, 0, NULL);
	for (i = 0; i < buf->nrows && rri->ri_NumIndices > 0; i++)
	{
		(void) ac_insert_index_tuples(rri, slots[i], estate);
		ResetPerTupleExprContext(estate);
	}

	/*
	 * Only now, after the unique index inserts (which wait for a run moving
	 * the same key), look at the archive: the largest key it holds, then a
	 * probe for each row at or below it.
	 */
	have_max = ac_archive_max_key(buf, &maxkey, &cmp, &collation);
	for (i = 0; i < buf->nrows; i++)
	{
		Datum		keyv[INDEX_MAX_KEYS];
		bool		keyn[INDEX_MAX_KEYS];

		for (k = 0; k < buf->nkeys; k++)
			keyv[k] = slot_getattr(slots[i], buf->keycur[k], &keyn[k]);
		/* above every key the archive's index holds: cannot be there */
		if (have_max && !keyn[0] &&
			DatumGetInt32(FunctionCall2Coll(&cmp, collation, keyv[0], maxkey)) > 0)
			continue;
		if (ac_key_exists(buf->archive, buf->arc_keyindex, buf->arc_keyeqproc,
						  buf->nkeys, keyv, keyn, false))
			ac_key_violation(buf->viewname, buf->archive);
	}
	for (i = 0; i < buf->nrows; i++)
		ExecDropSingleTupleTableSlot(slots[i]);
	ExecCloseIndices(rri);
	FreeExecutorState(estate);
	table_close(rel, NoLock);
	MemoryContextDelete(buf->cxt);
}

/* Flush, or drop, the buffers of this (sub)transaction level and deeper ones. */
static void
ac_buffers_end_level(bool flush)
{
	int			level = GetCurrentTransactionNestLevel();
	ListCell   *lc;

	foreach(lc, ac_buffers)
	{
		AcInsertBuffer *buf = lfirst(lc);

		if (buf->nestlevel < level)
			continue;
		if (flush)
			ac_buffer_flush(buf);	/* removes it from the list */
		else
		{
			ac_buffers = list_delete_ptr(ac_buffers, buf);
			MemoryContextDelete(buf->cxt);
		}
		ac_buffers_end_level(flush);	/* the list changed: start again */
		return;
	}
}

static void
ac_buffer_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PARALLEL_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			/* normally none left: the flush trigger ran at the end of each statement */
			ac_buffers_end_level(true);
			break;
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
			ac_buffers = NIL;	/* all of it goes with TopTransactionContext */
			break;
		default:
			break;
	}
}

static void
ac_buffer_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						   SubTransactionId parentSubid, void *arg)
{
	if (event == SUBXACT_EVENT_PRE_COMMIT_SUB)
		ac_buffers_end_level(true);
	else if (event == SUBXACT_EVENT_ABORT_SUB)
		ac_buffers_end_level(false);
}

/*
 * Buffer one INSERTed row of the view (view-shaped values); false when the
 * caller lacks the table-level INSERT privilege on <t>_current.
 */
bool
ac_buffer_insert(AcTriggerEntry *e, Relation view, Datum *viewv, bool *viewn)
{
	AcInsertBuffer *buf;
	Datum	   *values;
	bool	   *nulls;
	MemoryContext oldcxt;
	int			i;

	if (pg_class_aclcheck(e->current, GetUserId(), ACL_INSERT) != ACLCHECK_OK)
		return false;

	if (!ac_buffer_callbacks)
	{
		RegisterXactCallback(ac_buffer_xact_callback, NULL);
		RegisterSubXactCallback(ac_buffer_subxact_callback, NULL);
		ac_buffer_callbacks = true;
	}
	buf = ac_buffer_find(e->view, GetCurrentTransactionNestLevel());
	if (buf == NULL)
	{
		MemoryContext cxt = AllocSetContextCreate(TopTransactionContext,
												  "archive_cluster insert buffer",
												  ALLOCSET_DEFAULT_SIZES);

		buf = MemoryContextAllocZero(cxt, sizeof(AcInsertBuffer));

		buf->cxt = cxt;
		buf->view = e->view;
		strlcpy(buf->viewname, RelationGetRelationName(view), NAMEDATALEN);
		buf->current = e->current;
		buf->archive = e->archive;
		buf->arc_keyindex = e->keyindex[1];
		buf->nkeys = e->nkeys;
		memcpy(buf->arc_keyeqproc, e->keyeqproc[1], sizeof(buf->arc_keyeqproc));
		memcpy(buf->keycur, e->keycur, sizeof(buf->keycur));
		buf->nestlevel = GetCurrentTransactionNestLevel();
		oldcxt = MemoryContextSwitchTo(cxt);
		buf->desc = CreateTupleDescCopy(e->cur_desc);
		MemoryContextSwitchTo(TopTransactionContext);
		ac_buffers = lappend(ac_buffers, buf);
		MemoryContextSwitchTo(oldcxt);
	}

	values = palloc(sizeof(Datum) * e->cur_natts);
	nulls = palloc(sizeof(bool) * e->cur_natts);
	for (i = 0; i < e->cur_natts; i++)
	{
		int			v = e->cur_from_view[i];

		values[i] = v >= 0 ? viewv[v] : (Datum) 0;
		nulls[i] = v >= 0 ? viewn[v] : true;
	}
	oldcxt = MemoryContextSwitchTo(buf->cxt);
	buf->rows[buf->nrows++] = heap_form_tuple(buf->desc, values, nulls);
	MemoryContextSwitchTo(oldcxt);

	if (buf->nrows == AC_INSERT_BATCH)
		ac_buffer_flush(buf);
	return true;
}

/*
 * archive_cluster_view_flush(): AFTER INSERT FOR EACH STATEMENT on a
 * registered view: write the rows its INSERT or COPY buffered.
 */
Datum
archive_cluster_view_flush(PG_FUNCTION_ARGS)
{
	TriggerData *td;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("archive_cluster_view_flush() was not called by the trigger manager")));
	td = (TriggerData *) fcinfo->context;
	if (!TRIGGER_FIRED_AFTER(td->tg_event) || !TRIGGER_FIRED_FOR_STATEMENT(td->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("archive_cluster_view_flush() must be fired AFTER, FOR EACH STATEMENT")));
	ac_buffer_flush(ac_buffer_find(RelationGetRelid(td->tg_relation),
								   GetCurrentTransactionNestLevel()));
	return PointerGetDatum(NULL);
}

