/*-------------------------------------------------------------------------
 *
 * tier_unique_cache.c
 *		Table mode: the per-backend cache of what the cross-tier unique
 *		checks of one tier need (tier_unique.c): its unique indexes paired
 *		with their counterparts on the other tier, how to read each key from
 *		a row, the range of the archive's keys, and the tier's registration.
 *		Filled on first use, forgotten when a relcache invalidation names
 *		either tier.
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
#include "table/key_range.h"
#include "table/tier_indexes.h"
#include "table/tier_unique_cache.h"
#include "registry/config.h"

static HTAB *ac_unique_cache = NULL;
static uint64 ac_unique_invals = 0;	/* invalidations seen */
static uint64 ac_unique_fills = 0;	/* entries filled */


/* Forget entries of a relation changed (its indexes, its triggers). */
static void
ac_unique_cache_inval(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	AcUniqueEntry *e;

	ac_unique_invals++;
	hash_seq_init(&status, ac_unique_cache);
	while ((e = hash_seq_search(&status)) != NULL)
		if (relid == InvalidOid || e->relid == relid || e->other == relid)
			e->valid = false;
}

/*
 * The table-mode configuration a tier belongs to, if any: read as the
 * extension's owner, as whoever writes to <t> may have no privilege on the
 * extension's schema.
 */
bool
ac_tier_config(Oid relid, AcTableConfig *cfg)
{
	Oid			save_userid;
	int			save_sec_context;
	Oid			relation;
	bool		found;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(ac_extension_owner(),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	relation = ac_registered_view_of(relid);
	found = OidIsValid(relation) && ac_load_config(relation, cfg) && cfg->table_mode &&
		(relid == cfg->current || relid == cfg->archive);
	SetUserIdAndSecContext(save_userid, save_sec_context);
	SPI_finish();
	return found;
}

/*
 * Fill entry e for tier rel into *out, in a new memory context under
 * CacheMemoryContext.  An error leaves e as it was: invalid, to be filled
 * again.
 */
static void
ac_unique_entry_fill(AcUniqueEntry *e, Relation rel, AcUniqueEntry *out)
{
	AcTableConfig cfg;
	Relation	other;
	List	   *indexes;
	ListCell   *lc;
	MemoryContext cxt;

	memset(out, 0, sizeof(*out));
	out->relid = e->relid;
	if (!ac_tier_config(e->relid, &cfg))
		return;
	out->parent = cfg.relation;
	out->other = e->relid == cfg.current ? cfg.archive : cfg.current;

	other = table_open(out->other, AccessShareLock);
	indexes = RelationGetIndexList(rel);
	cxt = AllocSetContextCreate(CacheMemoryContext, "archive_cluster unique check",
								ALLOCSET_SMALL_SIZES);
	PG_TRY();
	{
		MemoryContext old;

		out->pairs = MemoryContextAllocZero(cxt, sizeof(AcUniquePair) *
											Max(list_length(indexes), 1));
		old = MemoryContextSwitchTo(cxt);
		out->desc = CreateTupleDescCopyConstr(RelationGetDescr(rel));
		MemoryContextSwitchTo(old);
		foreach(lc, indexes)
		{
			Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
			AcUniquePair *p = &out->pairs[out->npairs];
			int			i;

			if (index->rd_index->indisunique && index->rd_index->indislive &&
				lfirst_oid(lc) > out->last_unique)
				out->last_unique = lfirst_oid(lc);
			/*
			 * Every unique index that takes entries: also one being built
			 * by CREATE INDEX CONCURRENTLY or REINDEX CONCURRENTLY, which
			 * from then on refuses duplicates within its tier as on a plain
			 * table, and must across the tiers too; without counterpart, it
			 * keeps rows out of its tier.
			 */
			if (index->rd_index->indisunique && index->rd_index->indisready &&
				index->rd_index->indislive)
			{
				p->own = RelationGetRelid(index);
				p->other = ac_index_counterpart(p->own, other);
				if (!OidIsValid(p->other))
					out->missing = p->own;
				else
				{
					p->valid = index->rd_index->indisvalid;
					p->named = e->relid == out->parent ? p->own : p->other;
					p->nulls_equal = index->rd_index->indnullsnotdistinct;
					p->nkeys = IndexRelationGetNumberOfKeyAttributes(index);
					p->simple = RelationGetIndexPredicate(index) == NIL;
					for (i = 0; i < p->nkeys; i++)
					{
						p->eqprocs[i] = get_opcode(get_opfamily_member(index->rd_opfamily[i],
																	   index->rd_opcintype[i],
																	   index->rd_opcintype[i],
																	   BTEqualStrategyNumber));
						p->opfamilies[i] = index->rd_opfamily[i];
						p->opcintypes[i] = index->rd_opcintype[i];
						p->attnos[i] = index->rd_index->indkey.values[i];
						if (p->attnos[i] == 0)
							p->simple = false;	/* an expression */
					}
					if (e->relid == out->parent)
					{
						Relation	counterpart = index_open(p->other, AccessShareLock);

						p->range = ac_key_range_create(counterpart, out->other, cxt);
						index_close(counterpart, AccessShareLock);
					}
					out->npairs++;
				}
			}
			index_close(index, AccessShareLock);
		}
	}
	PG_CATCH();
	{
		MemoryContextDelete(cxt);
		PG_RE_THROW();
	}
	PG_END_TRY();
	out->cxt = cxt;
	list_free(indexes);
	table_close(other, AccessShareLock);
}

/* The cache entry of tier rel, filled if it is not valid. */
AcUniqueEntry *
ac_unique_entry_get(Relation rel)
{
	Oid			relid = RelationGetRelid(rel);
	AcUniqueEntry *e;
	bool		found;

	if (ac_unique_cache == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(AcUniqueEntry);
		ac_unique_cache = hash_create("archive_cluster unique checks", 16, &ctl,
									  HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(ac_unique_cache_inval, (Datum) 0);
	}
	e = hash_search(ac_unique_cache, &relid, HASH_ENTER, &found);
	if (!found)
	{
		e->cxt = NULL;
		e->valid = false;
	}
	if (!e->valid)
	{
		AcUniqueEntry filled;
		uint64		invals = ac_unique_invals;

		ac_unique_entry_fill(e, rel, &filled);

		/*
		 * The old memory may still be in use by a check this one interrupts
		 * (user code run by a comparison or an index expression): it goes
		 * with the transaction.
		 */
		if (e->cxt)
			MemoryContextSetParent(e->cxt, TopTransactionContext);
		*e = filled;
		e->fill = ++ac_unique_fills;
		/* an invalidation while filling: use it now, fill again next time */
		e->valid = ac_unique_invals == invals;
	}
	return e;
}

/*
 * Entry e copied into the current memory context (its pairs without their
 * ranges): a trigger fired while a check runs (by an index expression, say)
 * may fill the cached entry again (its old memory stays until the
 * transaction ends).
 */
AcUniqueEntry *
ac_unique_entry_copy(AcUniqueEntry *e)
{
	AcUniqueEntry *copy = palloc(sizeof(AcUniqueEntry));
	int			i;

	*copy = *e;
	copy->desc = NULL;
	copy->cxt = NULL;
	copy->pairs = palloc(sizeof(AcUniquePair) * Max(e->npairs, 1));
	if (e->npairs > 0)
		memcpy(copy->pairs, e->pairs, sizeof(AcUniquePair) * e->npairs);
	for (i = 0; i < copy->npairs; i++)
		copy->pairs[i].range = NULL;
	return copy;
}

/* A unique index of the tier without counterpart: no write can be checked. */
void
ac_missing_counterpart(AcUniqueEntry *e)
{
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("unique index \"%s\" of \"%s\" has no counterpart on \"%s\"",
					get_rel_name(e->missing), get_rel_name(e->relid), get_rel_name(e->other)),
			 errdetail("The index cannot be kept unique across the table and its archive."),
			 errhint("Create the same unique index on \"%s\".", get_rel_name(e->other))));
}

/* The cache entry of tier relid as it stands (valid or not), or NULL. */
AcUniqueEntry *
ac_unique_entry_find(Oid relid)
{
	if (ac_unique_cache == NULL)
		return NULL;
	return hash_search(ac_unique_cache, &relid, HASH_FIND, NULL);
}
