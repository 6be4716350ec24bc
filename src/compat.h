/*-------------------------------------------------------------------------
 *
 * compat.h
 *		Every difference between the supported PostgreSQL versions (15 to
 *		19) that archive_cluster's sources meet, in one place.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_COMPAT_H
#define ARCHIVE_CLUSTER_COMPAT_H

#include "postgres.h"

#if PG_VERSION_NUM < 150000
#error "archive_cluster requires PostgreSQL 15 or later"
#endif

#include "access/genam.h"
#include "access/tableam.h"
#include "catalog/dependency.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "parser/analyze.h"
#include "parser/parsetree.h"
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"	/* ExplainProperty*() since 18 */
#include "rewrite/rewriteHandler.h"
#endif
#include "pgstat.h"
#include "storage/buf_internals.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "storage/proc.h"
#include "utils/acl.h"
#include "utils/wait_event.h"

/*
 * Paths count their disabled nodes since 18 (enable_* off); a relation of
 * the range table is opened by the executor with a flag for result
 * relations since 18.
 */
#if PG_VERSION_NUM >= 180000
#define ac_sum_disabled_nodes(path, a, b) \
	((path)->disabled_nodes = (a)->disabled_nodes + (b)->disabled_nodes)
#define ac_get_range_table_relation(estate, rti) ExecGetRangeTableRelation((estate), (rti), false)
#else
#define ac_sum_disabled_nodes(path, a, b) ((void) 0)
#define ac_get_range_table_relation(estate, rti) ExecGetRangeTableRelation((estate), (rti))
#endif

/*
 * ExecInsertIndexTuples() gained an "onlySummarizing" argument in 16; in 19
 * it takes the estate before the slot and its three bools as EIIT_* flags.
 */
#if PG_VERSION_NUM >= 190000
#define ac_insert_index_tuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (estate), 0, (slot), NIL, NULL)
#elif PG_VERSION_NUM >= 160000
#define ac_insert_index_tuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false)
#else
#define ac_insert_index_tuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
#endif

/*
 * ExecCheckIndexConstraints() gained a "tupleid" argument (a row to ignore)
 * in 18; CHECK constraints can be NOT ENFORCED since 18.
 */
#if PG_VERSION_NUM >= 180000
static inline bool
ac_check_index_constraints(ResultRelInfo *rri, TupleTableSlot *slot, EState *estate,
						   ItemPointer conflict, List *arbiters)
{
	ItemPointerData none;

	ItemPointerSetInvalid(&none);
	return ExecCheckIndexConstraints(rri, slot, estate, conflict, &none, arbiters);
}
#define ac_check_enforced(check) ((check)->ccenforced)
/* virtual generated columns (18): stored as null, computed when read */
#define ac_att_is_virtual(att) ((att)->attgenerated == ATTRIBUTE_GENERATED_VIRTUAL)
#define ac_expand_virtual_columns(node, rel) \
	expand_generated_columns_in_expr((node), (rel), 1)
#else
#define ac_check_index_constraints(rri, slot, estate, conflict, arbiters) \
	ExecCheckIndexConstraints((rri), (slot), (estate), (conflict), (arbiters))
#define ac_check_enforced(check) true
#define ac_att_is_virtual(att) false
#define ac_expand_virtual_columns(node, rel) (node)
#endif

/*
 * Permission checks on relations: pg_class_ownercheck() became
 * object_ownercheck() in 16.
 */
#if PG_VERSION_NUM >= 160000
#define ac_class_ownercheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#else
#define ac_class_ownercheck(relid, roleid) \
	pg_class_ownercheck((relid), (roleid))
#endif
#if PG_VERSION_NUM >= 160000
#define ac_database_ownercheck(dboid, roleid) \
	object_ownercheck(DatabaseRelationId, (dboid), (roleid))
#else
#define ac_database_ownercheck(dboid, roleid) \
	pg_database_ownercheck((dboid), (roleid))
#endif

/*
 * Live tuples in a table's cumulative statistics: the field lost its "n_"
 * prefix in 16.
 */
#if PG_VERSION_NUM >= 160000
#define ac_stat_live_tuples(tabentry) ((tabentry)->live_tuples)
#else
#define ac_stat_live_tuples(tabentry) ((tabentry)->n_live_tuples)
#endif

/*
 * Wait events: extensions can name their own since 17; before, they all
 * show as "Extension".
 */
#if PG_VERSION_NUM >= 170000
#define ac_wait_event(name) WaitEventExtensionNew(name)
#else
#define ac_wait_event(name) PG_WAIT_EXTENSION
#endif

/*
 * Is this process a background worker?  The global IsBackgroundWorker was
 * replaced by AmBackgroundWorkerProcess() (a test of MyBackendType) in 17.
 */
#if PG_VERSION_NUM >= 170000
#define ac_is_background_worker() AmBackgroundWorkerProcess()
#else
#define ac_is_background_worker() IsBackgroundWorker
#endif

/*
 * index_beginscan() takes an instrumentation argument since 18 (none here),
 * and ScanOptions flags since 19 (none).
 */
#if PG_VERSION_NUM >= 190000
#define ac_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys), SO_NONE)
#elif PG_VERSION_NUM >= 180000
#define ac_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), NULL, (nkeys), (norderbys))
#else
#define ac_index_beginscan(heap, index, snapshot, nkeys, norderbys) \
	index_beginscan((heap), (index), (snapshot), (nkeys), (norderbys))
#endif

/*
 * The file a relation is stored in, and the file of a shared buffer's tag:
 * RelFileNode became RelFileLocator in 16, and buffer tags got accessors.
 */
#if PG_VERSION_NUM >= 160000
#define ac_rel_spc(rel)		((rel)->rd_locator.spcOid)
#define ac_rel_number(rel)	((rel)->rd_locator.relNumber)
#define ac_tag_spc(tag)		((tag)->spcOid)
#define ac_tag_db(tag)		((tag)->dbOid)
#define ac_tag_number(tag)	BufTagGetRelNumber(tag)
#define ac_tag_fork(tag)	BufTagGetForkNum(tag)
#else
#define ac_rel_spc(rel)		((rel)->rd_node.spcNode)
#define ac_rel_number(rel)	((rel)->rd_node.relNode)
#define ac_tag_spc(tag)		((tag)->rnode.spcNode)
#define ac_tag_db(tag)		((tag)->rnode.dbNode)
#define ac_tag_number(tag)	((tag)->rnode.relNode)
#define ac_tag_fork(tag)	((tag)->forkNum)
#endif

/*
 * getIdentitySequence() takes the relation instead of its OID since 17.
 */
#if PG_VERSION_NUM >= 170000
#define ac_identity_sequence(rel, attnum) \
	getIdentitySequence((rel), (attnum), true)
#else
#define ac_identity_sequence(rel, attnum) \
	getIdentitySequence(RelationGetRelid(rel), (attnum), true)
#endif

/*
 * table_tuple_update() says which indexes need new entries: a bool until 15,
 * none / all / summarizing only since 16 (and ExecInsertIndexTuples() can
 * then insert into the summarizing ones only).
 */
#if PG_VERSION_NUM >= 190000
/* 19: ExecInsertIndexTuples() takes EIIT_* flags (see ac_insert_index_tuples) */
typedef TU_UpdateIndexes AcUpdateIndexes;
#define ac_update_needs_indexes(u) ((u) != TU_None)
#define ac_update_only_summarizing(u) ((u) == TU_Summarizing)
#define ac_insert_index_tuples_update(rri, slot, estate, summarizing) \
	ExecInsertIndexTuples((rri), (estate), \
						  EIIT_IS_UPDATE | ((summarizing) ? EIIT_ONLY_SUMMARIZING : 0), \
						  (slot), NIL, NULL)
#elif PG_VERSION_NUM >= 160000
typedef TU_UpdateIndexes AcUpdateIndexes;
#define ac_update_needs_indexes(u) ((u) != TU_None)
#define ac_update_only_summarizing(u) ((u) == TU_Summarizing)
#define ac_insert_index_tuples_update(rri, slot, estate, summarizing) \
	ExecInsertIndexTuples((rri), (slot), (estate), true, false, NULL, NIL, (summarizing))
#else
typedef bool AcUpdateIndexes;
#define ac_update_needs_indexes(u) (u)
#define ac_update_only_summarizing(u) false
#define ac_insert_index_tuples_update(rri, slot, estate, summarizing) \
	ExecInsertIndexTuples((rri), (slot), (estate), true, false, NULL, NIL)
#endif

/*
 * The view that the rewriter expanded into a subquery range table entry, or
 * InvalidOid.  The entry keeps the view's OID since 16, and in the later
 * minor releases of 15 too (15.20 does), even once the planner has pulled
 * the subquery up.  Older releases of 15 clear it, but the view's query
 * holds the view itself as its OLD entry (first in its range table, not in
 * FROM, which no other subquery has) until the planner pulls it up.
 */
static inline Oid
ac_expanded_view(RangeTblEntry *rte)
{
	if (rte->rtekind != RTE_SUBQUERY)
		return InvalidOid;
	if (OidIsValid(rte->relid))
		return rte->relid;
#if PG_VERSION_NUM < 160000
	if (rte->subquery != NULL && list_length(rte->subquery->rtable) >= PRS2_OLD_VARNO)
	{
		RangeTblEntry *old = rt_fetch(PRS2_OLD_VARNO, rte->subquery->rtable);

		if (old->rtekind == RTE_RELATION && old->relkind == RELKIND_VIEW && !old->inFromCl)
			return old->relid;
	}
#endif
	return InvalidOid;
}

/* The backend's local transaction id moved into PGPROC's vxid in 17. */
#if PG_VERSION_NUM >= 170000
#define ac_local_xid() (MyProc->vxid.lxid)
#else
#define ac_local_xid() (MyProc->lxid)
#endif

/* This backend's index among all PGPROCs: MyProcNumber from 17 (pgprocno before). */
#if PG_VERSION_NUM >= 170000
#define ac_proc_number() ((int) MyProcNumber)
#else
#define ac_proc_number() (MyProc ? MyProc->pgprocno : -1)
#endif

/*
 * ExecutorRun (and its hook) lost the "execute_once" argument in 18.
 */
#if PG_VERSION_NUM >= 180000
#define AC_EXECUTOR_RUN_PARAMS QueryDesc *queryDesc, ScanDirection direction, uint64 count
#define AC_EXECUTOR_RUN_ARGS queryDesc, direction, count
#else
#define AC_EXECUTOR_RUN_PARAMS QueryDesc *queryDesc, ScanDirection direction, uint64 count, \
	bool execute_once
#define AC_EXECUTOR_RUN_ARGS queryDesc, direction, count, execute_once
#endif

/*
 * Table scans and modifications: table_beginscan() and
 * table_beginscan_tidrange() take ScanOptions flags since 19 (none here);
 * table_tuple_delete() takes an options bitmask since 19, in which
 * TABLE_DELETE_CHANGING_PARTITION replaced the "changingPart" bool;
 * table_tuple_update() takes an options bitmask since 19 (none here).
 */
#if PG_VERSION_NUM >= 190000
#define ac_table_beginscan(rel, snapshot, nkeys, key) \
	table_beginscan((rel), (snapshot), (nkeys), (key), SO_NONE)
#define ac_table_beginscan_tidrange(rel, snapshot, mintid, maxtid) \
	table_beginscan_tidrange((rel), (snapshot), (mintid), (maxtid), SO_NONE)
#define ac_table_tuple_delete(rel, tid, cid, snapshot, crosscheck, wait, tmfd, changing_part) \
	table_tuple_delete((rel), (tid), (cid), \
					   (changing_part) ? TABLE_DELETE_CHANGING_PARTITION : 0, \
					   (snapshot), (crosscheck), (wait), (tmfd))
#define ac_table_tuple_update(rel, otid, slot, cid, snapshot, crosscheck, wait, tmfd, \
							  lockmode, update_indexes) \
	table_tuple_update((rel), (otid), (slot), (cid), 0, (snapshot), (crosscheck), \
					   (wait), (tmfd), (lockmode), (update_indexes))
#else
#define ac_table_beginscan(rel, snapshot, nkeys, key) \
	table_beginscan((rel), (snapshot), (nkeys), (key))
#define ac_table_beginscan_tidrange(rel, snapshot, mintid, maxtid) \
	table_beginscan_tidrange((rel), (snapshot), (mintid), (maxtid))
#define ac_table_tuple_delete(rel, tid, cid, snapshot, crosscheck, wait, tmfd, changing_part) \
	table_tuple_delete((rel), (tid), (cid), (snapshot), (crosscheck), (wait), (tmfd), \
					   (changing_part))
#define ac_table_tuple_update(rel, otid, slot, cid, snapshot, crosscheck, wait, tmfd, \
							  lockmode, update_indexes) \
	table_tuple_update((rel), (otid), (slot), (cid), (snapshot), (crosscheck), \
					   (wait), (tmfd), (lockmode), (update_indexes))
#endif

/*
 * Per-trigger instrumentation (ResultRelInfo.ri_TrigInstrument): an array
 * of Instrumentation from InstrAlloc() until 18, of TriggerInstrumentation
 * from InstrAllocTrigger() since 19.
 */
#if PG_VERSION_NUM >= 190000
typedef TriggerInstrumentation AcTriggerInstrumentation;
#define ac_trigger_instr_alloc(n, instrument_options) \
	InstrAllocTrigger((n), (instrument_options))
#else
typedef Instrumentation AcTriggerInstrumentation;
#define ac_trigger_instr_alloc(n, instrument_options) \
	InstrAlloc((n), (instrument_options), false)
#endif

/*
 * A shared buffer header's state: 64 bits since 19 (32 before), and
 * UnlockBufHdr() no longer takes it back since 19.
 */
#if PG_VERSION_NUM >= 190000
typedef uint64 AcBufState;
#define ac_unlock_buf_hdr(hdr, state) UnlockBufHdr(hdr)
#else
typedef uint32 AcBufState;
#define ac_unlock_buf_hdr(hdr, state) UnlockBufHdr((hdr), (state))
#endif

/*
 * post_parse_analyze_hook gets a pointer to a const JumbleState since 19.
 */
#if PG_VERSION_NUM >= 190000
typedef const JumbleState AcJumbleState;
#else
typedef JumbleState AcJumbleState;
#endif

/*
 * The publications that publish a relation (catalog/pg_publication.h): the
 * ones that list it by name came from GetRelationPublications() until 18,
 * from GetRelationIncludedPublications() since 19; and since 19 a FOR ALL
 * TABLES publication can leave a relation out (EXCEPT), so only those that
 * do not are the relation's.
 */
#if PG_VERSION_NUM >= 190000
#define ac_relation_publications(relid) GetRelationIncludedPublications(relid)
#define ac_all_tables_publications(relid) \
	list_difference_oid(GetAllTablesPublications(), GetRelationExcludedPublications(relid))
#else
#define ac_relation_publications(relid) GetRelationPublications(relid)
#define ac_all_tables_publications(relid) GetAllTablesPublications()
#endif

/*
 * Add one new page to a relation and return its number; the page is left
 * empty (all zeros), as the heap's own extension may leave one, for the
 * next insert to initialize; read through "strategy" (a bulk write's
 * ring, or NULL).  Relations grow through ExtendBufferedRel() since 16, by
 * ReadBuffer(P_NEW) under the extension lock before.
 */
static inline BlockNumber
ac_extend_by_one_page(Relation rel, BufferAccessStrategy strategy)
{
	Buffer		buf;
	BlockNumber blk;

#if PG_VERSION_NUM >= 160000
	buf = ExtendBufferedRel(BMR_REL(rel), MAIN_FORKNUM, strategy, 0);
#else
	LockRelationForExtension(rel, ExclusiveLock);
	buf = ReadBufferExtended(rel, MAIN_FORKNUM, P_NEW, RBM_NORMAL, strategy);
	UnlockRelationForExtension(rel, ExclusiveLock);
#endif
	blk = BufferGetBlockNumber(buf);
	ReleaseBuffer(buf);
	return blk;
}

/*
 * planner_hook takes the EXPLAIN state being built since 19.
 */
#include "optimizer/planner.h"
#if PG_VERSION_NUM >= 190000
#define AC_PLANNER_PARAMS Query *parse, const char *query_string, int cursorOptions, \
	ParamListInfo boundParams, ExplainState *es
#define AC_PLANNER_ARGS parse, query_string, cursorOptions, boundParams, es
#else
#define AC_PLANNER_PARAMS Query *parse, const char *query_string, int cursorOptions, \
	ParamListInfo boundParams
#define AC_PLANNER_ARGS parse, query_string, cursorOptions, boundParams
#endif

/* 19: a TupleDesc built by hand is finalized before tuples are formed with it */
#if PG_VERSION_NUM < 190000
#define TupleDescFinalize(desc) ((void) 0)
#endif

#endif							/* ARCHIVE_CLUSTER_COMPAT_H */
