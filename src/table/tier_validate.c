/*-------------------------------------------------------------------------
 *
 * tier_validate.c
 *		Table mode: a unique index created on the tiers after registration
 *		holds across them from the start.  Each tier's index checks its own
 *		rows only, so the event trigger archive_cluster_check_new_indexes
 *		calls archive_cluster_validate_unique() for each unique index created
 *		on a tier (CREATE INDEX, ALTER TABLE ... ADD UNIQUE or PRIMARY KEY).
 *		Once the index has its counterpart on the other tier, every row of
 *		ONLY <t> is looked up in the archive's counterpart, and a key found
 *		there fails the command as CREATE UNIQUE INDEX fails on a plain table
 *		holding a duplicate (23505), whether the key was there before or was
 *		written while the pair was incomplete.  Writers of the other tier
 *		cannot race with the check: the command holds its tier's SHARE lock,
 *		and the other tier, whose unique index has no counterpart until the
 *		command commits, refuses writes (tier_unique.c).  An index built
 *		CONCURRENTLY takes entries before it is valid, and from then on the
 *		rows written to its tier are checked as they are written; the rows
 *		written before (whose writers CREATE INDEX CONCURRENTLY waits for)
 *		and those of writers still in progress, waited for here, are read
 *		by the check.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_index.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "archive_cluster.h"
#include "compat.h"
#include "base/key_probe.h"
#include "table/tier_indexes.h"
#include "base/util.h"
#include "registry/config.h"

PG_FUNCTION_INFO_V1(archive_cluster_validate_unique);

/* The table-mode configuration tier relid belongs to, if any. */
static bool
ac_tier_of(Oid relid, AcTableConfig *cfg)
{
	Oid			relation;
	bool		found;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	relation = ac_registered_view_of(relid);
	found = OidIsValid(relation) && ac_load_config(relation, cfg) && cfg->table_mode &&
		(relid == cfg->current || relid == cfg->archive);
	SPI_finish();
	return found;
}

/*
 * Error out if a row of ONLY <t> has its key (in <t>'s unique index tindex)
 * in the archive's counterpart aindex.
 */
static void
ac_validate_pair(AcTableConfig *cfg, Oid tindex, Oid aindex, Oid named)
{
	Relation	rel = table_open(cfg->current, AccessShareLock);
	Relation	index = index_open(tindex, AccessShareLock);
	IndexInfo  *ii = BuildIndexInfo(index);
	int			nkeys = IndexRelationGetNumberOfKeyAttributes(index);
	Oid			eqprocs[INDEX_MAX_KEYS];
	EState	   *estate = CreateExecutorState();
	ExprContext *econtext = GetPerTupleExprContext(estate);
	ExprState  *predicate = ExecPrepareQual(ii->ii_Predicate, estate);
	TupleTableSlot *slot = table_slot_create(rel, NULL);
	Snapshot	snapshot = RegisterSnapshot(GetLatestSnapshot());
	TableScanDesc scan = ac_table_beginscan(rel, snapshot, 0, NULL);
	int			i;

	for (i = 0; i < nkeys; i++)
		eqprocs[i] = get_opcode(get_opfamily_member(index->rd_opfamily[i],
													index->rd_opcintype[i],
													index->rd_opcintype[i],
													BTEqualStrategyNumber));
	econtext->ecxt_scantuple = slot;
	while (table_scan_getnextslot(scan, ForwardScanDirection, slot))
	{
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];

		CHECK_FOR_INTERRUPTS();
		ResetPerTupleExprContext(estate);
		if (predicate != NULL && !ExecQual(predicate, econtext))
			continue;
		FormIndexDatum(ii, slot, estate, values, isnull);
		if (ac_key_exists(cfg->archive, aindex, eqprocs, nkeys, values, isnull,
						  index->rd_index->indnullsnotdistinct))
		{
			char	   *key = BuildIndexValueDescription(index, values, isnull);

			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("could not create unique index \"%s\"", get_rel_name(named)),
					 key ? errdetail("Key %s is duplicated.", key) : 0,
					 errhint("The key is both in \"%s\" and in its archive \"%s\".",
							 RelationGetRelationName(rel), get_rel_name(cfg->archive)),
					 errtableconstraint(rel, get_rel_name(named))));
		}
	}
	table_endscan(scan);
	UnregisterSnapshot(snapshot);
	ExecDropSingleTupleTableSlot(slot);
	FreeExecutorState(estate);
	index_close(index, AccessShareLock);
	table_close(rel, AccessShareLock);
}

/*
 * archive_cluster_validate_unique(index regclass, created_now boolean): see
 * above.  Nothing to do for an index that is not unique, not on a tier of a
 * table in table mode, still without counterpart, or, if created_now, not
 * created by the current transaction (ALTER TABLE reports the table only).
 * The rows are read as the table's owner (index expressions and predicates
 * are the owner's code).
 */
Datum
archive_cluster_validate_unique(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	bool		created_now = PG_GETARG_BOOL(1);
	Oid			heapoid = IndexGetRelation(indexoid, true);
	AcTableConfig cfg;
	Relation	other;
	Oid			counterpart;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	HeapTuple	tup;
	bool		unique;
	Relation	index_table;
	bool		concurrent;

	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	if (!HeapTupleIsValid(tup))
		PG_RETURN_VOID();
	unique = ((Form_pg_index) GETSTRUCT(tup))->indisunique &&
		(!created_now || TransactionIdIsCurrentTransactionId(HeapTupleHeaderGetXmin(tup->t_data)));
	ReleaseSysCache(tup);
	if (!unique || !OidIsValid(heapoid) || !ac_tier_of(heapoid, &cfg))
		PG_RETURN_VOID();

	other = table_open(heapoid == cfg.current ? cfg.archive : cfg.current, AccessShareLock);
	counterpart = ac_index_counterpart(indexoid, other);
	table_close(other, AccessShareLock);
	if (!OidIsValid(counterpart))
		PG_RETURN_VOID();

	/*
	 * An index built concurrently (CREATE INDEX that holds no SHARE lock on
	 * its table at its end): wait for the writers of <t> still in progress, so that
	 * the rows they wrote are read; the rows written once the pair is valid
	 * are checked as they are written (tier_unique.c).
	 */
	index_table = table_open(heapoid, AccessShareLock);
	concurrent = !created_now && !CheckRelationLockedByMe(index_table, ShareLock, true);
	table_close(index_table, AccessShareLock);
	if (concurrent)
	{
		LOCKTAG		tag;

		SET_LOCKTAG_RELATION(tag, MyDatabaseId, cfg.current);
		WaitForLockers(tag, ShareLock, false);
	}

	ac_switch_to_owner(cfg.current, &save_userid, &save_sec_context, &save_nestlevel);
	if (heapoid == cfg.current)
		ac_validate_pair(&cfg, indexoid, counterpart, indexoid);
	else
		ac_validate_pair(&cfg, counterpart, indexoid, indexoid);
	ac_restore_user(save_userid, save_sec_context, save_nestlevel);
	PG_RETURN_VOID();
}
