/*-------------------------------------------------------------------------
 *
 * tier_unique.c
 *		Table mode: every unique index of <t> holds across <t> and its
 *		inheritance child <t>_archive, each of whose indexes sees its own
 *		rows only.
 *
 *		Each row written to a tier reaches the tier's guard index
 *		(tier_guard.c), which has it checked here once its entries in the
 *		tier's own unique indexes are in place: its key in each unique index
 *		is looked up in the counterpart index of the other tier with a dirty
 *		snapshot, waiting for a writer in progress as a unique index does
 *		(key_probe.c); a row found there is a duplicate: the statement fails
 *		with the error a unique index of a plain table gives, naming <t>'s
 *		index.  Of two transactions writing one key into the two tiers at
 *		once, the second to look sees the first one's entry.  A run moving a
 *		key from <t> to the archive while a new row with that key is
 *		inserted into <t> is seen too: the insert waits on <t>'s own unique
 *		index for the run's delete to commit, and the check, made after
 *		that, finds the key in the archive.
 *
 *		Cheap where it can be: a key of plain columns is read from the row
 *		directly, and a key written to <t> beyond the archive's largest key
 *		is not looked up (key_range.c).  The trigger function
 *		archive_cluster_unique_check() serves as the BEFORE trigger that
 *		on_conflict.c adds to INSERT ... ON CONFLICT statements.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/nodeModifyTable.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "archive_cluster.h"
#include "compat.h"
#include "base/key_probe.h"
#include "table/key_range.h"
#include "table/tier_unique.h"
#include "table/tier_unique_cache.h"
#include "table/unarchive.h"
#include "base/util.h"

PG_FUNCTION_INFO_V1(archive_cluster_unique_check);

/*
 * The arbiter indexes of the INSERT ... ON CONFLICT whose trigger
 * (ac_on_conflict_row) last let a row through to be inserted into tier
 * ac_upsert_relid; pending until the row reaches the tier's guard.
 */
static Oid	ac_upsert_relid = InvalidOid;
static bool ac_upsert_pending_row = false;
static int	ac_upsert_narbiters = 0;	/* -1: every unique index */
static Oid *ac_upsert_arbiters = NULL;	/* in TopMemoryContext */
static int	ac_upsert_maxarbiters = 0;

/*
 * The key of one unique index for a row (in the index's per-row memory of
 * estate).  False if the row is not in the index (a partial index's
 * predicate is false).
 */
static bool
ac_index_key(Relation index, TupleTableSlot *slot, EState *estate,
			 Datum *values, bool *isnull)
{
	IndexInfo  *ii = BuildIndexInfo(index);
	ExprContext *econtext = GetPerTupleExprContext(estate);

	econtext->ecxt_scantuple = slot;
	if (ii->ii_Predicate != NIL &&
		!ExecQual(ExecPrepareQual(ii->ii_Predicate, estate), econtext))
		return false;
	FormIndexDatum(ii, slot, estate, values, isnull);
	return true;
}

/* The cross-tier duplicate error, as a unique index of a plain table gives it. */
static void
ac_unique_violation(AcUniqueEntry *e, AcUniquePair *p, Datum *values, bool *isnull,
					const char *hint)
{
	Relation	parent = table_open(e->parent, AccessShareLock);
	Relation	named = index_open(p->named, AccessShareLock);
	char	   *key = BuildIndexValueDescription(named, values, isnull);

	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("duplicate key value violates unique constraint \"%s\"",
					RelationGetRelationName(named)),
			 key ? errdetail("Key %s already exists.", key) : 0,
			 hint ? errhint("%s", hint) : 0,
			 errtableconstraint(parent, RelationGetRelationName(named))));
}

/* A key of one unique index for a row, to be looked up in the other tier. */
typedef struct AcRowKey
{
	AcUniquePair *pair;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
} AcRowKey;

/*
 * The row's key in pair p into *key; false if it needs no look-up: the row
 * is not in the index (partial), or a NULL matches nothing.  Values in
 * estate's per-tuple memory.
 */
static bool
ac_row_key(AcUniquePair *p, TupleTableSlot *slot, EState *estate, AcRowKey *key)
{
	Relation	index = index_open(p->own, AccessShareLock);
	bool		needed;
	int			i;

	key->pair = p;
	needed = ac_index_key(index, slot, estate, key->values, key->isnull);
	for (i = 0; i < p->nkeys && needed && !p->nulls_equal; i++)
		needed = !key->isnull[i];
	index_close(index, AccessShareLock);
	return needed;
}

/* Is index indexid an arbiter of the INSERT ... ON CONFLICT last seen? */
static bool
ac_upsert_arbiter(Oid indexid)
{
	int			i;

	if (ac_upsert_narbiters < 0)
		return true;
	for (i = 0; i < ac_upsert_narbiters; i++)
		if (ac_upsert_arbiters[i] == indexid)
			return true;
	return false;
}

/*
 * A row of INSERT ... ON CONFLICT whose key, in one of its arbiter indexes,
 * a run moved to the archive after the statement's trigger had found it in
 * <t> and before the executor's own conflict check: that check waited for
 * the run, found no row and inserted; the statement cannot now skip or
 * update the row it meant to.  A serialization failure, retried by clients,
 * as for a row a run moves while an UPDATE waits for it.
 */
static void
ac_upsert_moved(AcUniqueEntry *e, AcUniquePair *p, Datum *values, bool *isnull)
{
	Relation	named = index_open(p->named, AccessShareLock);
	char	   *key = BuildIndexValueDescription(named, values, isnull);

	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent archiving"),
			 key ? errdetail("Key %s was written to \"%s\" by another transaction (an archive run) after INSERT ... ON CONFLICT looked for it.",
							 key, get_rel_name(e->other)) : 0));
}

/*
 * Look up the keys of a row written to tier e->relid in the other tier;
 * upsert: a row of INSERT ... ON CONFLICT.
 */
static void
ac_check_keys(AcUniqueEntry *e, AcRowKey *keys, int nkeys, bool upsert)
{
	int			i;

	/*
	 * A row written to the archive: <t>'s cached bounds of the archive's keys
	 * must not skip its keys (key_range.c).  After the row's entries are in,
	 * before looking in <t>.
	 */
	if (nkeys > 0 && e->relid != e->parent)
		ac_key_range_bump(e->relid);
	for (i = 0; i < nkeys; i++)
	{
		AcUniquePair *p = keys[i].pair;

		if (!ac_key_exists(e->other, p->other, p->eqprocs, p->nkeys, keys[i].values,
						   keys[i].isnull, p->nulls_equal))
			continue;
		if (upsert && ac_upsert_arbiter(p->own))
			ac_upsert_moved(e, p, keys[i].values, keys[i].isnull);
		ac_unique_violation(e, p, keys[i].values, keys[i].isnull, NULL);
	}
}

/*
 * Check the pairs of e marked in need (all if need is NULL) for the row in
 * slot, written to tier e->relid, keys computed as the index computes them;
 * and the ngiven keys already read from the row, looked up with them.
 */
static void
ac_check_row(AcUniqueEntry *e, bool *need, TupleTableSlot *slot, AcRowKey *given, int ngiven,
			 bool upsert)
{
	EState	   *estate = CreateExecutorState();
	AcRowKey   *keys = palloc(sizeof(AcRowKey) * (e->npairs + ngiven + 1));
	int			nkeys = 0;
	int			i;

	for (i = 0; i < ngiven; i++)
		keys[nkeys++] = given[i];
	for (i = 0; i < e->npairs; i++)
		if ((need == NULL || need[i]) &&
			ac_row_key(&e->pairs[i], slot, estate, &keys[nkeys]))
			nkeys++;
	ac_check_keys(e, keys, nkeys, upsert);
	FreeExecutorState(estate);
}

/*
 * ac_check_row() for a row given as a heap tuple, with a copy of entry e:
 * user code run by an index expression may fill the cached entry again.
 */
static void
ac_check_tuple_slot(AcUniqueEntry *e, bool *need, HeapTuple tuple, AcRowKey *given, int ngiven,
					bool upsert)
{
	Relation	rel = table_open(e->relid, AccessShareLock);
	AcUniqueEntry *copy = ac_unique_entry_copy(e);
	TupleTableSlot *slot;

	slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsHeapTuple);
	ExecStoreHeapTuple(tuple, slot, false);
	ac_check_row(copy, need, slot, given, ngiven, upsert);
	ExecDropSingleTupleTableSlot(slot);
	table_close(rel, AccessShareLock);
}

/*
 * The row of INSERT ... ON CONFLICT that trigdata's trigger lets through
 * goes on to the executor's conflict check, then to the tier's guard: keep
 * its arbiter indexes for the guard's check (ac_unique_upsert_pending).
 */
static void
ac_upsert_note_row(TriggerData *trigdata)
{
	Trigger    *trig = trigdata->tg_trigger;
	int			n = trig->tgnargs - 2;
	int			i;

	if (n > ac_upsert_maxarbiters)
	{
		Oid		   *arbiters = MemoryContextAlloc(TopMemoryContext, sizeof(Oid) * n);

		if (ac_upsert_arbiters != NULL)
			pfree(ac_upsert_arbiters);
		ac_upsert_arbiters = arbiters;
		ac_upsert_maxarbiters = n;
	}
	for (i = 0; i < n; i++)
		ac_upsert_arbiters[i] = atooid(trig->tgargs[i + 2]);
	ac_upsert_narbiters = n > 0 ? n : -1;	/* no target: every unique index */
	ac_upsert_relid = RelationGetRelid(trigdata->tg_relation);
	ac_upsert_pending_row = true;
}

/*
 * Is a row of INSERT ... ON CONFLICT on its way into tier rel (its trigger
 * let it through, its guard has not taken it yet)?  The guard, telling it
 * from other rows written meanwhile (by user code the insert runs) by its
 * speculative insertion, then takes it (ac_unique_upsert_taken).
 */
bool
ac_unique_upsert_pending(Relation rel)
{
	return ac_upsert_pending_row && ac_upsert_relid == RelationGetRelid(rel);
}

void
ac_unique_upsert_taken(void)
{
	ac_upsert_pending_row = false;
}

/*
 * INSERT ... ON CONFLICT into a tier (on_conflict.c): a BEFORE ROW trigger
 * whose arguments are the action, the command id to bring rows back with
 * and the arbiter indexes.  A row whose key in an arbiter index is in the
 * other tier is skipped (DO NOTHING); for DO UPDATE into <t>, the archived
 * row is brought back into <t> (unarchive.c), where the executor's own
 * conflict check finds it and updates it.  Into the archive directly, DO
 * UPDATE meeting a row of <t> is refused.
 */
static Datum
ac_on_conflict_row(TriggerData *trigdata, AcUniqueEntry *e)
{
	Trigger    *trig = trigdata->tg_trigger;
	Relation	rel = trigdata->tg_relation;
	bool		nothing = strcmp(trig->tgargs[0], "nothing") == 0;
	CommandId	cid = (CommandId) strtoul(trig->tgargs[1], NULL, 10);
	EState	   *estate = CreateExecutorState();
	TupleTableSlot *slot = trigdata->tg_trigslot;
	bool		skip = false;
	int			i,
				j;

	/*
	 * Stored generated columns are computed after BEFORE triggers: compute
	 * them on a copy, for an index that uses one.
	 */
	if (rel->rd_att->constr != NULL && rel->rd_att->constr->has_generated_stored)
	{
		ResultRelInfo *rri = makeNode(ResultRelInfo);

		InitResultRelInfo(rri, rel, 0, NULL, 0);
		slot = MakeSingleTupleTableSlot(RelationGetDescr(rel), &TTSOpsVirtual);
		ExecCopySlot(slot, trigdata->tg_trigslot);
		ExecComputeStoredGenerated(rri, estate, slot, CMD_INSERT);
	}

	for (i = 0; i < e->npairs; i++)
	{
		AcUniquePair *p = &e->pairs[i];
		Relation	index;
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];
		bool		arbiter = trig->tgnargs == 2;	/* no target: every unique index */
		bool		inindex;

		for (j = 2; j < trig->tgnargs && !arbiter; j++)
			arbiter = atooid(trig->tgargs[j]) == p->own;
		if (!arbiter)
			continue;
		index = index_open(p->own, AccessShareLock);
		inindex = ac_index_key(index, slot, estate, values, isnull);
		index_close(index, AccessShareLock);

		/*
		 * First the key in <t> itself, waiting for a transaction that is
		 * deleting it: a run moving it to the archive.  Found there, the
		 * executor's own conflict check deals with it; else, once the run
		 * has committed, the row is found in the archive.
		 */
		if (!inindex ||
			ac_key_exists(e->relid, p->own, p->eqprocs, p->nkeys, values, isnull,
						  p->nulls_equal))
			;					/* the executor's conflict check decides */
		else if (nothing)
		{
			if (ac_key_exists(e->other, p->other, p->eqprocs, p->nkeys, values, isnull,
							  p->nulls_equal))
			{
				skip = true;	/* as a conflict in this tier would */
				break;
			}
		}
		else if (e->relid == e->parent)
		{
			if (ac_unarchive_key(rel, e->other, p->other, p->eqprocs, p->nkeys, values,
								 isnull, p->nulls_equal, cid))
				break;			/* now in <t>: the executor updates it */
		}
		else if (ac_key_exists(e->other, p->other, p->eqprocs, p->nkeys, values, isnull,
							   p->nulls_equal))
			ac_unique_violation(e, p, values, isnull,
								"INSERT ... ON CONFLICT DO UPDATE into the archive does not update rows of the table; insert into the table instead.");
		ResetPerTupleExprContext(estate);
	}
	if (slot != trigdata->tg_trigslot)
		ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	ac_pause_point("upsert_checked", 5);
	if (!skip)
		ac_upsert_note_row(trigdata);
	return PointerGetDatum(skip ? NULL : trigdata->tg_trigtuple);
}

Datum
archive_cluster_unique_check(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	TriggerEvent event;
	AcUniqueEntry *e;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("archive_cluster_unique_check() was not called by the trigger manager")));
	event = trigdata->tg_event;
	if (TRIGGER_FIRED_BEFORE(event) && TRIGGER_FIRED_FOR_ROW(event) &&
		TRIGGER_FIRED_BY_INSERT(event) && trigdata->tg_trigger->tgnargs >= 2 &&
		trigdata->tg_trigger->tgoid == InvalidOid &&	/* on_conflict.c's */
		(strcmp(trigdata->tg_trigger->tgargs[0], "nothing") == 0 ||
		 strcmp(trigdata->tg_trigger->tgargs[0], "update") == 0))
	{
		e = ac_unique_entry_copy(ac_unique_entry_get(trigdata->tg_relation));
		if (!OidIsValid(e->parent) || OidIsValid(e->missing))
			return PointerGetDatum(trigdata->tg_trigtuple);	/* the guard's check says */
		return ac_on_conflict_row(trigdata, e);
	}
	ereport(ERROR,
			(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
			 errmsg("archive_cluster_unique_check() may only be called by archive_cluster for INSERT ... ON CONFLICT")));
	return PointerGetDatum(NULL);	/* keep the compiler quiet */
}

/*
 * The other tier of entry e, locked (to the end of the transaction, as the
 * look-ups keep it) once per (sub)transaction: its indexes cannot go away
 * then, and changes made to them before are seen (as invalidations of the
 * entry).
 */
static void
ac_lock_other(AcUniqueEntry *e)
{
	Relation	rel;

	if (e->locked == e->other && e->locked_lxid == ac_local_xid() &&
		e->locked_subid == GetCurrentSubTransactionId())
		return;
	e->locked = InvalidOid;
	rel = try_table_open(e->other, AccessShareLock);
	if (rel == NULL)
		return;					/* dropped: the entry is invalid now */
	table_close(rel, NoLock);
	e->locked = e->other;
	e->locked_lxid = ac_local_xid();
	e->locked_subid = GetCurrentSubTransactionId();
}

/*
 * Are the keys of a row written to tier rel, given as the values of columns
 * cols[0..ncols-1] of the row, all beyond the archive's keys (key_range.c:
 * read now, after the row's own entries are in) or with a NULL that matches
 * nothing?  Then the row needs no look-up.  False when that cannot be told
 * from those columns (a key with an expression, a predicate or another
 * column; a unique index without counterpart: checked, and refused).
 */
static bool
ac_unique_keys_beyond(AcUniqueEntry *e, const AttrNumber *cols, int ncols,
					  const Datum *values, const bool *isnull)
{
	uint64		fill;
	int			npairs;
	AcUniquePair *pairs;
	int			i;

	if (OidIsValid(e->missing))
		return false;

	/* the entry as it is now: a comparison (user code) may fill it again */
	fill = e->fill;
	npairs = e->npairs;
	pairs = e->pairs;
	for (i = 0; i < npairs; i++)
	{
		AcUniquePair *p = &pairs[i];
		Datum		keyvalues[INDEX_MAX_KEYS];
		bool		keynull[INDEX_MAX_KEYS];
		bool		anynull = false;
		int			k;

		if (!p->simple || p->range == NULL)
			return false;
		for (k = 0; k < p->nkeys; k++)
		{
			int			c = 0;

			while (c < ncols && cols[c] != p->attnos[k])
				c++;
			if (c == ncols)
				return false;	/* not given: read from the row */
			keyvalues[k] = values[c];
			keynull[k] = isnull[c];
			anynull |= isnull[c];
		}
		if (!(anynull && !p->nulls_equal) &&
			!ac_key_range_beyond(p->range, keyvalues, keynull))
			return false;
	}
	return e->valid && e->fill == fill;	/* else changed meanwhile: check */
}

/*
 * What guard index "guard" of tier rel does with a row that reaches it,
 * values and isnull being the guard's columns of the row.  The executor
 * inserts a row's index entries in the order of the indexes' OIDs: if
 * those of the tier's unique indexes come after the guard's (a unique index
 * created, or rebuilt by REINDEX CONCURRENTLY, after registration), the row
 * is noted, to be checked once complete (ac_unique_row_beyond() may then
 * tell from the same values that it needs no look-up).  Else it is checked
 * now, unless its keys are all beyond the archive's (ac_unique_keys_beyond):
 * the usual row of <t>, with an identity or time-ordered key, which the
 * check then need not read again.
 */
AcGuardAction
ac_unique_guard_action(Relation rel, Relation guard, Datum *values, bool *isnull)
{
	AcUniqueEntry *e = ac_unique_entry_get(rel);

	if (!OidIsValid(e->parent))
		return AC_GUARD_SKIP;	/* not a tier of a table in table mode */
	if (e->last_unique >= RelationGetRelid(guard))
		return AC_GUARD_NOTE;
	if (ac_unique_keys_beyond(e, guard->rd_index->indkey.values, guard->rd_index->indnatts,
							  values, isnull))
		return AC_GUARD_SKIP;
	return AC_GUARD_CHECK;
}

/*
 * A row noted by its guard (AC_GUARD_NOTE) in tier relid, now complete: are
 * its keys, given as the values of its columns cols, all beyond the
 * archive's?  Then it needs no check, nor to be read again.  False when the
 * tier's entry is not at hand (the full check then fills it).
 */
bool
ac_unique_row_beyond(Oid relid, const AttrNumber *cols, int ncols,
					 const Datum *values, const bool *isnull)
{
	AcUniqueEntry *e;

	/* the entry as the guard left it: not filled again here (no lock held) */
	e = ac_unique_entry_find(relid);
	return e != NULL && e->valid && OidIsValid(e->parent) &&
		ac_unique_keys_beyond(e, cols, ncols, values, isnull);
}

/*
 * Does unique index indexid of tier rel hold across the tiers, other being
 * the other tier?  Then a key that rel holds is in no row of other that the
 * same snapshot sees (tier_lookup.c).
 */
bool
ac_unique_holds_across(Relation rel, Oid indexid, Oid other)
{
	AcUniqueEntry *e = ac_unique_entry_get(rel);
	int			i;

	if (!OidIsValid(e->parent) || e->other != other || OidIsValid(e->missing))
		return false;
	for (i = 0; i < e->npairs; i++)
		if (e->pairs[i].own == indexid)
			return e->pairs[i].valid;
	return false;
}

/* at most this many keys of plain columns are read into the stack */
#define AC_STACK_KEYS 4

/*
 * Check the keys of tuple, a row version that this transaction has just
 * written to tier rel (tier_guard.c), by INSERT ... ON CONFLICT if upsert:
 * each key of a unique index of rel is
 * looked up in the counterpart index of the other tier, unless it is
 * beyond the archive's keys (a row of <t>).  Keys of plain columns are
 * read from the tuple; keys with an expression or a predicate are computed
 * as the index computes them.
 */
void
ac_unique_check_tuple(Relation rel, HeapTuple tuple, bool upsert)
{
	AcUniqueEntry *e = ac_unique_entry_get(rel);
	AcRowKey	stack[AC_STACK_KEYS];
	AcRowKey   *keys = stack;
	int			nkeys = 0;
	bool	   *need = NULL;
	uint64		fill;
	int			npairs;
	AcUniquePair *pairs;
	TupleDesc	desc;
	int			i;

	if (!OidIsValid(e->parent))
		return;					/* not a tier of a table in table mode */
	if (OidIsValid(e->missing))
		ac_missing_counterpart(e);

	/*
	 * The keys that need a look in the other tier: those of plain columns
	 * read from the row into keys, the others (an expression or a predicate
	 * to evaluate) marked in need.  The entry as it is now: a comparison
	 * (user code) may fill it again.
	 */
	fill = e->fill;
	npairs = e->npairs;
	pairs = e->pairs;
	desc = e->desc;
	if (npairs > AC_STACK_KEYS)
		keys = palloc(sizeof(AcRowKey) * npairs);
	for (i = 0; i < npairs; i++)
	{
		AcUniquePair *p = &pairs[i];
		AcRowKey   *key = &keys[nkeys];
		bool		anynull = false;
		int			k;

		if (!p->simple)
		{
			if (need == NULL)
				need = palloc0(sizeof(bool) * npairs);
			need[i] = true;
			continue;
		}
		for (k = 0; k < p->nkeys; k++)
		{
			key->values[k] = heap_getattr(tuple, p->attnos[k], desc, &key->isnull[k]);
			anynull |= key->isnull[k];
		}
		if ((anynull && !p->nulls_equal) ||
			ac_key_range_beyond(p->range, key->values, key->isnull))
			continue;			/* matches nothing, or beyond the archive */
		key->pair = p;
		nkeys++;
	}
	if (nkeys == 0 && need == NULL)
		return;

	ac_lock_other(e);
	if (!e->valid || e->fill != fill)
	{
		/* changed meanwhile: filled again, and every key of the row checked */
		e = ac_unique_entry_get(rel);
		if (!OidIsValid(e->parent))
			return;
		if (OidIsValid(e->missing))
			ac_missing_counterpart(e);
		ac_lock_other(e);
		ac_check_tuple_slot(e, NULL, tuple, NULL, 0, upsert);
		return;
	}
	if (need == NULL)
	{
		/* a copy of the entry, which a comparison may fill again */
		AcUniqueEntry here = *e;

		ac_check_keys(&here, keys, nkeys, upsert);
	}
	else
		ac_check_tuple_slot(e, need, tuple, keys, nkeys, upsert);
}

/*
 * A statement is about to write to tier rel (ExecutorStart): for the
 * archive, lock <t> now, as its rows' checks will, before any row.  <t>
 * is then locked before the archive as far as it can be: ALTER TABLE <t>
 * locks <t>, then its child, and a writer of the archive waiting for <t>
 * at its first row, holding the archive, would deadlock with it.  (The
 * archive's own lock is taken by the statement's parse analysis, before
 * any hook; only an ALTER TABLE that comes in between can still meet it.)
 */
void
ac_unique_lock_parent(Relation rel)
{
	AcUniqueEntry *e = ac_unique_entry_get(rel);

	if (OidIsValid(e->parent) && e->relid != e->parent)
		ac_lock_other(e);
}

/*
 * COPY FROM into relid, before it opens the table: <t> first if relid is
 * the archive of a table in table mode.
 */
void
ac_unique_lock_parent_of(Oid relid)
{
	AcTableConfig cfg;

	if (ac_tier_config(relid, &cfg) && relid == cfg.archive)
		LockRelationOid(cfg.relation, AccessShareLock);
}
