/*-------------------------------------------------------------------------
 *
 * view_cache.c
 *		The per-backend cache of a registered view's trigger: which columns
 *		of its tables the view's columns are (tiers.c), the statements the
 *		trigger runs on each table, prepared once, the identity key and its
 *		index in each table, and what the fast paths may do.  An entry is
 *		thrown away when any of the three relations changes (relcache
 *		invalidation), and used only with both tables locked.
 *
 *		Fast paths skip the executor start-up of a statement per row, which
 *		dominates COPY and multi-row INSERT through the view:
 *		- INSERT into a current table without triggers, row-level security,
 *		  generated columns or deferrable unique indexes goes straight to the
 *		  table and its indexes (constraints checked), after a check of the
 *		  caller's INSERT privilege; otherwise it runs a prepared INSERT.
 *		  Such rows are kept in a buffer and written together, with
 *		  multi-inserts, when it holds AC_INSERT_BATCH rows and at the end of
 *		  the statement (the view's AFTER INSERT FOR EACH STATEMENT trigger
 *		  archive_cluster_flush), as COPY into a table does.  The row the
 *		  trigger returns (RETURNING) is the row as it will be stored.  A
 *		  buffer holds the rows of one view and one (sub)transaction level;
 *		  it is dropped when that level aborts.
 *		- UPDATE of a row of such a current table that is found by its key
 *		  and is still exactly the row the statement read is done straight
 *		  on the table and its indexes (waiting, as UPDATE does, for another
 *		  transaction changing it); any other case (not in current, changed
 *		  meanwhile, column privileges only) goes to the prepared
 *		  statements, which wait and fail as described.
 *		- The identity key's uniqueness across the two tables is checked by
 *		  a direct scan of the other table's key index.
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
#include "registry/tiers.h"
#include "view/view_cache.h"
#include "base/util.h"
#include "registry/config.h"

static HTAB *ac_trigger_cache = NULL;

static void
ac_trigger_cache_inval(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	AcTriggerEntry *entry;

	if (ac_trigger_cache == NULL)
		return;
	hash_seq_init(&status, ac_trigger_cache);
	while ((entry = hash_seq_search(&status)) != NULL)
	{
		if (relid == InvalidOid || entry->view == relid ||
			entry->current == relid || entry->archive == relid)
			entry->valid = false;
	}
}

static void
ac_free_entry(AcTriggerEntry *entry)
{
	int			t;

	if (entry->insert)
		SPI_freeplan(entry->insert);
	for (t = 0; t < 2; t++)
	{
		if (entry->tiers[t].update)
			SPI_freeplan(entry->tiers[t].update);
		if (entry->tiers[t].delete)
			SPI_freeplan(entry->tiers[t].delete);
		if (entry->tiers[t].exists)
			SPI_freeplan(entry->tiers[t].exists);
	}
	if (entry->mcxt)
		MemoryContextDelete(entry->mcxt);
	entry->insert = NULL;
	memset(entry->tiers, 0, sizeof(entry->tiers));
	entry->mcxt = NULL;
}

static SPIPlanPtr
ac_prepare(const char *sql, int nargs, Oid *argtypes)
{
	SPIPlanPtr	plan = SPI_prepare(sql, nargs, argtypes);

	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed for \"%s\": %s", sql,
			 SPI_result_code_string(SPI_result));
	if (SPI_keepplan(plan) != 0)
		elog(ERROR, "SPI_keepplan failed");
	return plan;
}

/* "OPERATOR(schema.name)" for an operator, so no search_path is consulted */
static char *
ac_operator_sql(Oid op)
{
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(op));
	Form_pg_operator form;
	char	   *result;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", op);
	form = (Form_pg_operator) GETSTRUCT(tup);
	result = psprintf("OPERATOR(%s.%s)",
					  quote_identifier(get_namespace_name(form->oprnamespace)),
					  NameStr(form->oprname));
	ReleaseSysCache(tup);
	return result;
}

/* "k1 = $f AND ... [AND ROW(c...) *= ROW($g...)]"; returns the next param */
static int
ac_append_match(StringInfo buf, AcTriggerEntry *e, char **names, char **eqsql,
				int p, bool whole_row)
{
	int			i;

	for (i = 0; i < e->nkeys; i++)
		appendStringInfo(buf, "%s%s %s $%d", i > 0 ? " AND " : "",
						 names[e->keycols[i]], eqsql[i], p++);
	if (!whole_row)
		return p;
	/* casts keep the parser from comparing the rows column by column */
	appendStringInfoString(buf, " AND CAST(ROW(");
	for (i = 0; i < e->natts; i++)
		appendStringInfo(buf, "%s%s", i > 0 ? ", " : "", names[i]);
	appendStringInfoString(buf, ") AS pg_catalog.record) OPERATOR(pg_catalog.*=) CAST(ROW(");
	for (i = 0; i < e->natts; i++)
	{
		appendStringInfo(buf, "%s$%d", i > 0 ? ", " : "", p);
		p++;
	}
	appendStringInfoString(buf, ") AS pg_catalog.record)");
	return p;
}

/* "c1, c2, ...": the quoted names of a tier's columns, in view order */
static char *
ac_name_list(AcTriggerEntry *e, char **names)
{
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	for (i = 0; i < e->natts; i++)
		appendStringInfo(&buf, "%s%s", i > 0 ? ", " : "", names[i]);
	return buf.data;
}

/*
 * Prepare the statements of one tier; settable says which columns SET,
 * names are the tier's (quoted) names of the view's columns.
 */
static void
ac_prepare_tier(AcTriggerEntry *e, AcTierPlans *tier, const char *qrel,
				bool *settable, char **names, char **eqsql)
{
	StringInfoData buf;
	Oid		   *argtypes = palloc(sizeof(Oid) * (2 * e->natts + e->nkeys));
	int			nargs = 0;
	int			p = 1;
	int			i;

	/* UPDATE */
	initStringInfo(&buf);
	appendStringInfo(&buf, "UPDATE %s SET ", qrel);
	for (i = 0; i < e->natts; i++)
	{
		if (!settable[i])
			continue;
		appendStringInfo(&buf, "%s%s = $%d", p > 1 ? ", " : "", names[i], p);
		p++;
		argtypes[nargs++] = e->types[i];
	}
	/*
	 * Every column is generated (or the identity, GENERATED ALWAYS): the
	 * UPDATE recomputes a stored generated column, as "UPDATE t SET g =
	 * DEFAULT" on a table does, so that it still finds, locks and returns
	 * the row.
	 */
	for (i = 0; p == 1 && i < e->natts; i++)
	{
		if (!settable[i] && !e->always_identity[i])
		{
			appendStringInfo(&buf, "%s = DEFAULT", names[i]);
			p = 0;
		}
	}
	if (p == 1)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot update rows of %s: it has no column an UPDATE can set", qrel)));
	p = Max(p, 1);
	appendStringInfoString(&buf, " WHERE ");
	ac_append_match(&buf, e, names, eqsql, p, true);
	for (i = 0; i < e->nkeys; i++)
		argtypes[nargs++] = e->types[e->keycols[i]];
	for (i = 0; i < e->natts; i++)
		argtypes[nargs++] = e->types[i];
	appendStringInfo(&buf, " RETURNING %s", ac_name_list(e, names));
	tier->update = ac_prepare(buf.data, nargs, argtypes);

	/* DELETE */
	resetStringInfo(&buf);
	appendStringInfo(&buf, "DELETE FROM %s WHERE ", qrel);
	ac_append_match(&buf, e, names, eqsql, 1, true);
	tier->delete = ac_prepare(buf.data, nargs - (p - 1), argtypes + (p - 1));

	/* does a row with this key exist at all? */
	resetStringInfo(&buf);
	appendStringInfo(&buf, "SELECT 1 FROM %s WHERE ", qrel);
	ac_append_match(&buf, e, names, eqsql, 1, false);
	tier->exists = ac_prepare(buf.data, e->nkeys, argtypes + (p - 1));
}

/* The cache entry of a registered view, (re)built when needed. */
/*
 * The unique btree index of rel whose key columns are exactly the view's
 * identity key columns, in order (atts: the view's columns in rel);
 * InvalidOid when there is none.
 */
static Oid
ac_find_key_index(Relation rel, AcTriggerEntry *e, const AttrNumber *atts, Oid *eqprocs)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	Oid			result = InvalidOid;

	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index ix = idx->rd_index;
		bool		ok;
		int			i;

		ok = ac_is_key_index(idx) && ix->indnkeyatts == e->nkeys;
		for (i = 0; ok && i < e->nkeys; i++)
		{
			Oid			eqop;

			ok = ix->indkey.values[i] == atts[e->keycols[i]];
			if (!ok)
				break;
			eqop = get_opfamily_member(idx->rd_opfamily[i], idx->rd_opcintype[i],
									   idx->rd_opcintype[i], BTEqualStrategyNumber);
			ok = OidIsValid(eqop);
			if (ok)
				eqprocs[i] = get_opcode(eqop);
		}
		if (ok)
			result = RelationGetRelid(idx);
		index_close(idx, AccessShareLock);
		if (OidIsValid(result))
			break;
	}
	list_free(indexes);
	return result;
}

/* Decide what the fast paths can do for this view (see the header). */
static void
ac_prepare_fast_paths(AcTriggerEntry *e, Relation view, Relation cur, Relation arc)
{
	TupleDesc	cdesc = RelationGetDescr(cur);
	List	   *indexes;
	ListCell   *lc;
	MemoryContext oldcxt;
	int			i;

	e->keyindex[0] = ac_find_key_index(cur, e, e->curatt, e->keyeqproc[0]);
	e->keyindex[1] = ac_find_key_index(arc, e, e->arcatt, e->keyeqproc[1]);

	e->direct_insert = cur->trigdesc == NULL && !cur->rd_rel->relrowsecurity &&
		!(cdesc->constr && cdesc->constr->has_generated_stored);
	indexes = RelationGetIndexList(cur);
	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);

		if (!idx->rd_index->indimmediate)
			e->direct_insert = false;
		index_close(idx, AccessShareLock);
	}
	list_free(indexes);

	e->cur_natts = cdesc->natts;
	e->cur_from_view = MemoryContextAlloc(e->mcxt, sizeof(int) * cdesc->natts);
	for (i = 0; i < cdesc->natts; i++)
	{
		e->cur_from_view[i] = ac_view_column_of(e->curatt, e->natts, i + 1);
		if (!TupleDescAttr(cdesc, i)->attisdropped && e->cur_from_view[i] < 0)
			e->direct_insert = false;
	}
	for (i = 0; i < e->nkeys; i++)
		e->keycur[i] = e->curatt[e->keycols[i]];
	oldcxt = MemoryContextSwitchTo(e->mcxt);
	e->cur_desc = CreateTupleDescCopy(cdesc);
	MemoryContextSwitchTo(oldcxt);

	/*
	 * Batches need the flush trigger, and no other trigger on the view that
	 * could look at the table before it fires.
	 */
	e->batch_insert = e->direct_insert && OidIsValid(e->keyindex[1]) &&
		view->trigdesc != NULL && view->trigdesc->numtriggers == 2;
	for (i = 0; e->batch_insert && i < view->trigdesc->numtriggers; i++)
	{
		Trigger    *tg = &view->trigdesc->triggers[i];

		if (strcmp(tg->tgname, "archive_cluster_dml") != 0 &&
			strcmp(tg->tgname, "archive_cluster_flush") != 0)
			e->batch_insert = false;
	}
}

AcTriggerEntry *
ac_trigger_entry(Relation view)
{
	Oid			viewid = RelationGetRelid(view);
	TupleDesc	desc = RelationGetDescr(view);
	AcTriggerEntry *e;
	AcTableConfig cfg;
	Relation	cur;
	Relation	arc;
	char	  **curnames;
	char	  **arcnames;
	char	   *eqsql[INDEX_MAX_KEYS];
	AttrNumber	keys[INDEX_MAX_KEYS];
	Oid			eqops[INDEX_MAX_KEYS];
	StringInfoData buf;
	Oid		   *argtypes;
	bool		any_always = false;
	int			nargs = 0;
	bool		found;
	int			i;

	if (ac_trigger_cache == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(AcTriggerEntry);
		ac_trigger_cache = hash_create("archive_cluster trigger cache", 16, &ctl,
									   HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(ac_trigger_cache_inval, (Datum) 0);
	}

	e = hash_search(ac_trigger_cache, &viewid, HASH_ENTER, &found);
	if (!found)
	{
		memset((char *) e + sizeof(Oid), 0, sizeof(AcTriggerEntry) - sizeof(Oid));
		e->valid = false;
	}
	/*
	 * Lock both tables before trusting the entry, for the rest of the
	 * transaction, as a statement on them would: taking a lock processes the
	 * invalidations of DDL committed meanwhile (which clear e->valid), and
	 * holding it keeps further DDL out until the end of the transaction, so
	 * the entry matches the tables for as long as it is used.  (An INSERT on
	 * the view locks no table itself.)  Order: view, current, archive, as
	 * runs take them.
	 */
	if (e->valid)
	{
		LockRelationOid(e->current, RowExclusiveLock);
		LockRelationOid(e->archive, RowExclusiveLock);
	}
	if (e->valid)
		return e;
	ac_free_entry(e);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	if (!ac_load_config(viewid, &cfg))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("view \"%s\" is not registered with archive_cluster",
						RelationGetRelationName(view)),
				 errhint("The trigger is left over from an earlier registration or was created by hand; drop it.")));

	e->current = cfg.current;
	e->archive = cfg.archive;
	e->natts = desc->natts;
	e->mcxt = AllocSetContextCreate(CacheMemoryContext, "archive_cluster trigger",
									ALLOCSET_SMALL_SIZES);
	e->insertable = MemoryContextAllocZero(e->mcxt, sizeof(bool) * e->natts);
	e->cur_settable = MemoryContextAllocZero(e->mcxt, sizeof(bool) * e->natts);
	e->arc_settable = MemoryContextAllocZero(e->mcxt, sizeof(bool) * e->natts);
	e->always_identity = MemoryContextAllocZero(e->mcxt, sizeof(bool) * e->natts);
	e->identity_seq = MemoryContextAllocZero(e->mcxt, sizeof(Oid) * e->natts);
	e->types = MemoryContextAllocZero(e->mcxt, sizeof(Oid) * e->natts);
	e->typlens = MemoryContextAllocZero(e->mcxt, sizeof(int16) * e->natts);
	e->typbyvals = MemoryContextAllocZero(e->mcxt, sizeof(bool) * e->natts);

	e->always_col = -1;

	cur = table_open(cfg.current, RowExclusiveLock);
	arc = table_open(cfg.archive, RowExclusiveLock);

	/* the view's columns are columns of its tables by number, not by name */
	e->curatt = MemoryContextAlloc(e->mcxt, sizeof(AttrNumber) * e->natts);
	e->arcatt = MemoryContextAlloc(e->mcxt, sizeof(AttrNumber) * e->natts);
	ac_tier_columns(view, cfg.current, cfg.archive, e->curatt, e->arcatt);

	curnames = palloc(sizeof(char *) * e->natts);
	arcnames = palloc(sizeof(char *) * e->natts);
	for (i = 0; i < e->natts; i++)
	{
		Form_pg_attribute vatt = TupleDescAttr(desc, i);
		AttrNumber	ca = e->curatt[i];
		Form_pg_attribute catt = TupleDescAttr(RelationGetDescr(cur), ca - 1);
		Form_pg_attribute aatt = TupleDescAttr(RelationGetDescr(arc), e->arcatt[i] - 1);

		curnames[i] = pstrdup(quote_identifier(NameStr(catt->attname)));
		arcnames[i] = pstrdup(quote_identifier(NameStr(aatt->attname)));
		e->types[i] = vatt->atttypid;
		e->typlens[i] = vatt->attlen;
		e->typbyvals[i] = vatt->attbyval;
		e->insertable[i] = !catt->attgenerated;
		e->cur_settable[i] = !catt->attgenerated &&
			catt->attidentity != ATTRIBUTE_IDENTITY_ALWAYS;
		e->always_identity[i] = catt->attidentity == ATTRIBUTE_IDENTITY_ALWAYS;
		if (catt->attidentity)
			e->identity_seq[i] = ac_identity_sequence(cur, ca);
		e->arc_settable[i] = !aatt->attgenerated;
		if (e->always_identity[i])
			e->always_col = i;	/* a table has one identity column at most */
		any_always |= e->always_identity[i];
	}

	e->nkeys = ac_identity_key(cur, keys, eqops);
	if (e->nkeys == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" has no primary key or NOT NULL unique index",
						RelationGetRelationName(cur))));
	for (i = 0; i < e->nkeys; i++)
	{
		e->keycols[i] = ac_view_column_of(e->curatt, e->natts, keys[i]);
		if (e->keycols[i] < 0)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("key column \"%s\" of table \"%s\" is not a column of view \"%s\"",
							NameStr(TupleDescAttr(RelationGetDescr(cur), keys[i] - 1)->attname),
							RelationGetRelationName(cur), RelationGetRelationName(view)),
					 errhint("Unregister and register the table again after changing its columns.")));
		eqsql[i] = ac_operator_sql(eqops[i]);
	}

	/* INSERT into current */
	argtypes = palloc(sizeof(Oid) * e->natts);
	initStringInfo(&buf);
	appendStringInfo(&buf, "INSERT INTO %s (", ac_qualified_name(cfg.current));
	for (i = 0; i < e->natts; i++)
	{
		if (!e->insertable[i])
			continue;
		appendStringInfo(&buf, "%s%s", nargs > 0 ? ", " : "", curnames[i]);
		argtypes[nargs++] = e->types[i];
	}
	appendStringInfo(&buf, ")%s VALUES (", any_always ? " OVERRIDING SYSTEM VALUE" : "");
	for (i = 0; i < nargs; i++)
		appendStringInfo(&buf, "%s$%d", i > 0 ? ", " : "", i + 1);
	appendStringInfo(&buf, ") RETURNING %s", ac_name_list(e, curnames));
	e->insert = ac_prepare(buf.data, nargs, argtypes);

	ac_prepare_tier(e, &e->tiers[0], ac_qualified_name(cfg.current),
					e->cur_settable, curnames, eqsql);
	ac_prepare_tier(e, &e->tiers[1], ac_qualified_name(cfg.archive),
					e->arc_settable, arcnames, eqsql);

	ac_prepare_fast_paths(e, view, cur, arc);

	table_close(cur, NoLock);
	table_close(arc, NoLock);
	e->valid = true;
	SPI_finish();
	return e;
}

/*
 * The tables are locked while an entry is used (ac_trigger_entry), so they
 * cannot change under it; these checks only make sure that a row is never
 * built or returned with a shape other than the one the entry was built for.
 */
void
ac_check_shape(bool ok, const char *what)
{
	if (!ok)
		elog(ERROR, "%s does not match the registered view's cached description", what);
}

