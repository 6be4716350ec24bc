/*-------------------------------------------------------------------------
 *
 * probe_scan.c
 *		The custom scan ArchiveClusterProbe, executed: the rows of the first
 *		tier's scan, or, when it finds none, the archive's rows with the same
 *		key.
 *
 *		probe_path.c wraps every path of the first tier (<t> in table mode,
 *		<t>_current in view mode) of a query that qualifies in this scan.
 *		Its scan tuple is the first tier's row: the wrapped plan returns whole
 *		rows, and this node applies the query's projection.  When that plan
 *		returns no row, the key's values (constants, parameters, InitPlan
 *		results) are evaluated and looked up in the archive's unique index
 *		with the statement's snapshot; an archived row, converted to the
 *		first tier's row type (its tableoid, ctid and transaction fields the
 *		archived row's), is returned if the query's quals accept it.  So the
 *		rows are exactly those the two tiers' scans would return, given the
 *		premise the candidates checked: a snapshot that sees the key in the
 *		first tier sees none in the archive.
 *
 *		Under SERIALIZABLE the archive is probed for every key, so that the
 *		read takes its predicate locks there as the scan of both tiers
 *		would.  The archive is locked and held open from the start (ACCESS
 *		SHARE), as that scan would hold it; its index, the slots and the
 *		quals for its rows are readied at the first probe, which a key found
 *		in the first tier never needs.  The plan depends on the archive (a
 *		change to it, such as its indexes, plans again).  Should the index be
 *		gone by then (DDL between planning and execution), the probe reads
 *		the archive's heap with the quals.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/tupconvert.h"
#include "access/xact.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "nodes/extensible.h"
#include "utils/datum.h"
#include "utils/plancache.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "compat.h"
#include "base/guc.h"
#include "plan/probe.h"
#include "table/key_range.h"
#include "table/tier_unique_cache.h"

/* Executor state. */
typedef struct AcProbeState
{
	CustomScanState css;
	Relation	rel;			/* the first tier */
	PlanState  *first;			/* the scan of the first tier */
	List	   *keys;			/* ExprStates of the key values */
	Oid			archiveid;
	Oid			indexid;		/* the archive's index (plan) */
	Oid			checkid;		/* UPDATE/DELETE: <t>'s index whose key was
								 * beyond the archive's when planned */
	Relation	archive;		/* NULL if dropped since planning */
	Relation	aindex;			/* NULL: the probe reads the heap */
	int			nkeys;
	Oid			opnos[INDEX_MAX_KEYS];	/* "column = value", from the plan */
	MemoryContext keycxt;		/* the key values of a probe */
	IndexScanDesc iscan;
	TableScanDesc hscan;
	TupleTableSlot *aslot;		/* archive rows */
	TupleTableSlot *cslot;		/* converted to the first tier's row type */
	TupleConversionMap *map;	/* NULL if the row types are alike */
	int			phase;			/* 0: the first tier, 1: the archive, 2: done */
	bool		found;
	bool		prepared;	/* ac_probe_prepare() done */
	bool		checked;		/* no start check due, or done */
	int64		probes;
} AcProbeState;

static Node *ac_probe_create_state(CustomScan *cscan);
static void ac_probe_begin(CustomScanState *node, EState *estate, int eflags);
static TupleTableSlot *ac_probe_exec(CustomScanState *node);
static void ac_probe_end(CustomScanState *node);
static void ac_probe_rescan(CustomScanState *node);
static void ac_probe_explain(CustomScanState *node, List *ancestors, ExplainState *es);
static void ac_probe_prepare(AcProbeState *s);
static bool ac_probe_start(AcProbeState *s);
static TupleTableSlot *ac_probe_next(AcProbeState *s);
static void ac_probe_stop(AcProbeState *s);

const CustomScanMethods ac_probe_scan_methods = {
	.CustomName = AC_PROBE_NAME,
	.CreateCustomScanState = ac_probe_create_state,
};

static const CustomExecMethods ac_probe_exec_methods = {
	.CustomName = AC_PROBE_NAME,
	.BeginCustomScan = ac_probe_begin,
	.ExecCustomScan = ac_probe_exec,
	.EndCustomScan = ac_probe_end,
	.ReScanCustomScan = ac_probe_rescan,
	.ExplainCustomScan = ac_probe_explain,
};

/* ---- execution ---- */

static Node *
ac_probe_create_state(CustomScan *cscan)
{
	AcProbeState *s = palloc0(sizeof(AcProbeState));

	NodeSetTag(s, T_CustomScanState);
	s->css.methods = &ac_probe_exec_methods;
	return (Node *) s;
}

/*
 * Ready the probe at its first use: the archive's counterpart index (if still
 * a usable unique index of the archive: a DROP or REINDEX CONCURRENTLY may be
 * under way, or a new index may not hold rows that older snapshots see, as
 * the planner checks; else the probe reads the heap), the slots for archived rows, the
 * conversion to the first tier's row type and the quals built for slots of
 * any kind.  A statement whose key is in the first tier never needs them.
 */
static void
ac_probe_prepare(AcProbeState *s)
{
	EState	   *estate = s->css.ss.ps.state;
	CustomScan *cscan = (CustomScan *) s->css.ss.ps.plan;
	Relation	rel = s->rel;
	MemoryContext old = MemoryContextSwitchTo(estate->es_query_cxt);
	int			i;

	s->prepared = true;
	if (s->nkeys > 0)
		s->aindex = try_relation_open(s->indexid, AccessShareLock);
	if (s->aindex)
	{
		Form_pg_index ix = s->aindex->rd_index;
		bool		usable;

		usable = s->aindex->rd_rel->relkind == RELKIND_INDEX && ix != NULL &&
			ix->indrelid == s->archiveid && ix->indisunique && ix->indisvalid &&
			ix->indisready && ix->indislive &&
			IndexRelationGetNumberOfKeyAttributes(s->aindex) == s->nkeys &&
			(!ix->indcheckxmin ||
			 TransactionIdPrecedes(HeapTupleHeaderGetXmin(s->aindex->rd_indextuple->t_data),
								   estate->es_snapshot->xmin));
		for (i = 0; usable && i < s->nkeys; i++)
			usable = op_in_opfamily(s->opnos[i], s->aindex->rd_opfamily[i]);
		if (!usable)
		{
			relation_close(s->aindex, AccessShareLock);
			s->aindex = NULL;
		}
	}
	s->aslot = ExecInitExtraTupleSlot(estate, RelationGetDescr(s->archive),
									  table_slot_callbacks(s->archive));
	s->map = convert_tuples_by_name(RelationGetDescr(s->archive), RelationGetDescr(rel));
	if (s->map)
		s->cslot = ExecInitExtraTupleSlot(estate, RelationGetDescr(rel), &TTSOpsHeapTuple);
	/* built by ExecInitCustomScan for a scan slot of one kind */
	s->css.ss.ps.qual = ExecInitQual(cscan->scan.plan.qual, &s->css.ss.ps);
	MemoryContextSwitchTo(old);
}

/*
 * Table mode's UPDATE or DELETE planned over ONLY <t> because its key was
 * beyond every key of the archive (plan/probe_table.c): checked again before
 * its first row, with the statement's snapshot.  Every writer of an archive key
 * moves the range's counter after the key's index entry is in and before
 * it commits (key_range.c), so if a row with the key is visible to the
 * snapshot, the counter moved before this check, which then reads the
 * archive's largest key again.  When the range cannot tell (a batch being
 * written, a bound moved past the key, SERIALIZABLE, the guard changed,
 * archive_cluster.tier_lookup off), the key is looked up in the archive
 * with the statement's snapshot, as the plan over both tiers would (its
 * predicate lock too): an archived row the quals accept (a run archived it
 * since planning) fails the statement with 40001, as for other races with a
 * run, and the session's cached plans are made again (a retry plans both
 * tiers).
 */
static void
ac_probe_check_beyond(AcProbeState *s)
{
	Relation	rel = s->rel;
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	AcUniqueEntry *e;
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	AcKeyRange *range = NULL;
	ListCell   *lc;
	bool		beyond;
	int			i = 0;

	e = ac_unique_entry_get(rel);
	for (int p = 0; p < e->npairs; p++)
		if (e->pairs[p].own == s->checkid && e->pairs[p].valid && e->probe_tiers &&
			e->pairs[p].other <= e->probe_arc_guard &&
			e->pairs[p].nkeys == list_length(s->keys))
			range = e->pairs[p].range;
	foreach(lc, s->keys)
	{
		values[i] = ExecEvalExprSwitchContext(lfirst(lc), econtext, &isnull[i]);
		i++;
	}
	beyond = range != NULL && !IsolationIsSerializable() && archive_cluster_tier_lookup &&
		ac_key_range_beyond(range, values, isnull);
	ResetExprContext(econtext);
	if (beyond)
		return;

	if (ac_probe_start(s) && ac_probe_next(s) != NULL)
	{
		ac_probe_stop(s);
		ResetPlanCache();
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("could not serialize access due to concurrent archiving"),
				 errdetail("The row of table \"%s\" this statement was planned for has been archived since.",
						   RelationGetRelationName(rel)),
				 errhint("Retry the statement.")));
	}
	ac_probe_stop(s);
}

static void
ac_probe_begin(CustomScanState *node, EState *estate, int eflags)
{
	AcProbeState *s = (AcProbeState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;

	/*
	 * The scan tuples are the first tier's rows (the wrapped plan's slots) and the
	 * archive's (its slots, or converted ones): the projection and the quals,
	 * built for a virtual scan slot, are built again for slots of any kind.
	 * The rows returned are these slots when no projection is needed.
	 */
	/*
	 * The node's scan slot never holds the row it returns: WHERE CURRENT OF
	 * a portal of this plan (one not planned as a cursor, which keeps both
	 * tiers: a protocol-level portal, say) must not find this node as the
	 * scan of the first tier and update nothing; without a relation it
	 * fails ("not a simply updatable scan").
	 */
	s->rel = node->ss.ss_currentRelation;
	node->ss.ss_currentRelation = NULL;
	node->ss.ps.scanopsfixed = false;
	node->ss.ps.scanopsset = true;
	ExecAssignScanProjectionInfoWithVarno(&node->ss, cscan->scan.scanrelid);
	node->ss.ps.qual = NULL;	/* until ac_probe_prepare() */
	node->ss.ps.resultopsset = true;
	node->ss.ps.resultopsfixed = false;

	s->archiveid = linitial_oid(cscan->custom_private);
	s->indexid = lsecond_oid(cscan->custom_private);
	s->checkid = lthird_oid(cscan->custom_private);
	s->nkeys = list_length(cscan->custom_private) - 3;
	for (int i = 0; i < s->nkeys; i++)
		s->opnos[i] = list_nth_oid(cscan->custom_private, i + 3);
	s->keycxt = AllocSetContextCreate(estate->es_query_cxt, "ArchiveClusterProbe keys",
									  ALLOCSET_SMALL_SIZES);
	s->first = ExecInitNode(linitial(cscan->custom_plans), estate, eflags);
	node->custom_ps = list_make1(s->first);
	s->keys = ExecInitExprList(cscan->custom_exprs, &node->ss.ps);

	/*
	 * The archive is locked and held open from the start (ACCESS SHARE), as
	 * the Append's scan would hold it, so that it counts as in use by the
	 * query (no TRUNCATE of it by this session while a cursor is open, say;
	 * DDL of other sessions waits).
	 */
	s->archive = try_table_open(s->archiveid, AccessShareLock);

	/*
	 * An UPDATE or DELETE planned without the archive is checked at its first
	 * row (ac_probe_exec), once the InitPlans its quals may use are set up;
	 * not in an EvalPlanQual recheck, which reads again the row of <t> that
	 * the statement locked, as on a plain table.
	 */
	s->checked = !OidIsValid(s->checkid) || estate->es_epq_active != NULL;
}

/* Start the probe: the archive's rows with the key (all if no index). */
static bool
ac_probe_start(AcProbeState *s)
{
	EState	   *estate = s->css.ss.ps.state;
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;
	ScanKeyData skeys[INDEX_MAX_KEYS];
	ListCell   *lc;
	int			i = 0;

	if (s->archive == NULL)
		return false;			/* dropped since planning */
	if (!s->prepared)
		ac_probe_prepare(s);
	s->probes++;
	if (s->aindex == NULL)
	{
		s->hscan = ac_table_beginscan(s->archive, estate->es_snapshot, 0, NULL);
		return true;
	}
	MemoryContextReset(s->keycxt);
	foreach(lc, s->keys)
	{
		bool		isnull;
		Datum		value = ExecEvalExprSwitchContext(lfirst(lc), econtext, &isnull);
		int			strategy;
		Oid			lefttype;
		Oid			righttype;
		int16		typlen;
		bool		typbyval;
		MemoryContext old;

		if (isnull)
			return false;		/* "=" matches no NULL */
		get_op_opfamily_properties(s->opnos[i], s->aindex->rd_opfamily[i], false,
								   &strategy, &lefttype, &righttype);
		get_typlenbyval(righttype, &typlen, &typbyval);
		old = MemoryContextSwitchTo(s->keycxt);
		value = datumCopy(value, typbyval, typlen);
		MemoryContextSwitchTo(old);
		ScanKeyEntryInitialize(&skeys[i], 0, i + 1, strategy, righttype,
							   s->aindex->rd_indcollation[i], get_opcode(s->opnos[i]), value);
		i++;
	}
	s->iscan = ac_index_beginscan(s->archive, s->aindex, estate->es_snapshot, s->nkeys, 0);
	index_rescan(s->iscan, skeys, s->nkeys, NULL, 0);
	return true;
}

/* The archived row in aslot as a row of <t> (the slot to read it from). */
static TupleTableSlot *
ac_probe_convert(AcProbeState *s)
{
	HeapTuple	src;
	HeapTuple	dst;

	if (s->map == NULL)
		return s->aslot;
	execute_attr_map_slot(s->map->attrMap, s->aslot, s->cslot);
	ExecMaterializeSlot(s->cslot);
	/* its system columns: the archived row's */
	dst = ((HeapTupleTableSlot *) s->cslot)->tuple;
	dst->t_self = s->aslot->tts_tid;
	dst->t_tableOid = s->archiveid;
	if (TTS_IS_BUFFERTUPLE(s->aslot))
	{
		src = ((BufferHeapTupleTableSlot *) s->aslot)->base.tuple;
		dst->t_data->t_choice = src->t_data->t_choice;
		dst->t_data->t_ctid = src->t_data->t_ctid;
		dst->t_data->t_infomask = (dst->t_data->t_infomask & ~HEAP_XACT_MASK) |
			(src->t_data->t_infomask & HEAP_XACT_MASK);
		dst->t_data->t_infomask2 = (dst->t_data->t_infomask2 & ~HEAP2_XACT_MASK) |
			(src->t_data->t_infomask2 & HEAP2_XACT_MASK);
	}
	s->cslot->tts_tableOid = s->archiveid;
	s->cslot->tts_tid = s->aslot->tts_tid;
	return s->cslot;
}

/* The next archived row that the quals accept, or NULL. */
static TupleTableSlot *
ac_probe_next(AcProbeState *s)
{
	ExprContext *econtext = s->css.ss.ps.ps_ExprContext;

	for (;;)
	{
		bool		got;
		TupleTableSlot *row;

		CHECK_FOR_INTERRUPTS();
		if (s->iscan)
			got = index_getnext_slot(s->iscan, ForwardScanDirection, s->aslot);
		else
			got = table_scan_getnextslot(s->hscan, ForwardScanDirection, s->aslot);
		if (!got)
			return NULL;
		row = ac_probe_convert(s);
		ResetExprContext(econtext);
		econtext->ecxt_scantuple = row;
		if (ExecQual(s->css.ss.ps.qual, econtext))
			return row;
	}
}

static void
ac_probe_stop(AcProbeState *s)
{
	if (s->iscan)
		index_endscan(s->iscan);
	if (s->hscan)
		table_endscan(s->hscan);
	s->iscan = NULL;
	s->hscan = NULL;
}

/* The row of the scan tuple row, projected as the plan asks. */
static TupleTableSlot *
ac_probe_project(AcProbeState *s, TupleTableSlot *row)
{
	ProjectionInfo *proj = s->css.ss.ps.ps_ProjInfo;

	if (proj == NULL)
		return row;
	s->css.ss.ps.ps_ExprContext->ecxt_scantuple = row;
	return ExecProject(proj);
}

static TupleTableSlot *
ac_probe_exec(CustomScanState *node)
{
	AcProbeState *s = (AcProbeState *) node;
	TupleTableSlot *row;

	if (!s->checked)
	{
		s->checked = true;
		ac_probe_check_beyond(s);
	}
	if (s->phase == 0)
	{
		row = ExecProcNode(s->first);
		if (!TupIsNull(row))
		{
			/* a row projected by the first plan (a dropped column) */
			if (!OidIsValid(row->tts_tableOid))
				row->tts_tableOid = RelationGetRelid(s->rel);
			s->found = true;
			ResetExprContext(node->ss.ps.ps_ExprContext);
			return ac_probe_project(s, row);
		}
		s->phase = 2;
		/*
		 * Under SERIALIZABLE the archive's scan takes its predicate locks;
		 * with archive_cluster.tier_lookup turned off since planning, both
		 * tiers are read.
		 */
		if (!OidIsValid(s->checkid) &&
			(!s->found || IsolationIsSerializable() || !archive_cluster_tier_lookup) &&
			ac_probe_start(s))
			s->phase = 1;
	}
	if (s->phase == 1)
	{
		row = ac_probe_next(s);
		if (row != NULL)
			return ac_probe_project(s, row);
		ac_probe_stop(s);
		s->phase = 2;
	}
	return ExecClearTuple(node->ss.ps.ps_ResultTupleSlot);
}

static void
ac_probe_end(CustomScanState *node)
{
	AcProbeState *s = (AcProbeState *) node;

	ac_probe_stop(s);
	ExecEndNode(s->first);
	if (s->aindex)
		relation_close(s->aindex, NoLock);
	if (s->archive)
		table_close(s->archive, NoLock);
}

static void
ac_probe_rescan(CustomScanState *node)
{
	AcProbeState *s = (AcProbeState *) node;

	ac_probe_stop(s);
	if (node->ss.ps.chgParam != NULL)
		UpdateChangedParamSet(s->first, node->ss.ps.chgParam);
	if (s->first->chgParam == NULL)
		ExecReScan(s->first);
	s->phase = 0;
	s->found = false;
}

static void
ac_probe_explain(CustomScanState *node, List *ancestors, ExplainState *es)
{
	AcProbeState *s = (AcProbeState *) node;
	char	   *name = get_rel_name(s->archiveid);

	ExplainPropertyText("Archive", name ? name : "(dropped)", es);
	if (OidIsValid(s->checkid))
		ExplainPropertyText("Archive Keys", "below this key (checked at start)", es);
	if (es->analyze)
		ExplainPropertyInteger("Archive Probes", NULL, s->probes, es);
}

/* Register the custom scan (in every session). */
void
ac_probe_scan_register(void)
{
	RegisterCustomScanMethods(&ac_probe_scan_methods);
}
