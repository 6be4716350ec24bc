/*-------------------------------------------------------------------------
 *
 * triggers.c
 *		The INSTEAD OF INSERT / UPDATE / DELETE row trigger of a registered
 *		view.
 *
 *		INSERT goes to <t>_current.  UPDATE and DELETE find the row by its
 *		identity key in <t>_current, then in <t>_archive, and only touch it if
 *		it is still exactly the row the statement read through the view
 *		(binary row comparison, *=).  If the row exists but was changed by a
 *		concurrent transaction, the statement fails with SQLSTATE 40001, so a
 *		concurrent update is never silently lost; if a run moved it to the
 *		archive meanwhile, it is found there.
 *
 *		Statements are prepared once per backend and view, and thrown away
 *		when any of the three relations changes (relcache invalidation).
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
#include "tiers.h"

PG_FUNCTION_INFO_V1(archive_cluster_view_trigger);
PG_FUNCTION_INFO_V1(archive_cluster_view_flush);
PG_FUNCTION_INFO_V1(archive_cluster_identity_nextval);

/* rows of INSERTs through a view written together */
#define AC_INSERT_BATCH 1000

/* The statements of one tier (current or archive). */
typedef struct AcTierPlans
{
	SPIPlanPtr	update;			/* $1..$n new values, then key, then old row */
	SPIPlanPtr	delete;			/* key, then old row */
	SPIPlanPtr	exists;			/* key */
} AcTierPlans;

typedef struct AcTriggerEntry
{
	Oid			view;			/* hash key */
	bool		valid;
	Oid			current;
	Oid			archive;
	int			natts;			/* columns of the view */
	int			nkeys;
	int			keycols[INDEX_MAX_KEYS];	/* view column index (0-based) */
	bool		*insertable;	/* per view column: goes into INSERT */
	bool		*cur_settable;	/* per view column: SET in UPDATE of current */
	bool		*arc_settable;	/* per view column: SET in UPDATE of archive */
	bool		*always_identity;	/* per view column */
	Oid		   *identity_seq;	/* per view column: current's identity sequence */
	Oid		   *types;
	int16	   *typlens;
	bool	   *typbyvals;
	SPIPlanPtr	insert;
	AcTierPlans tiers[2];		/* 0 = current, 1 = archive */
	bool		direct_insert;	/* INSERT may skip the prepared statement */
	bool		batch_insert;	/* ... and be written at the end of the statement */
	TupleDesc	cur_desc;
	AttrNumber	keycur[INDEX_MAX_KEYS]; /* the key's columns in current */
	AttrNumber *curatt;			/* per view column: its column of current */
	AttrNumber *arcatt;			/* per view column: its column of archive */
	int		   *cur_from_view;	/* per column of current: view column or -1 */
	int			cur_natts;
	Oid			keyindex[2];	/* the key's unique index in each tier */
	Oid			keyeqproc[2][INDEX_MAX_KEYS];
	MemoryContext mcxt;
} AcTriggerEntry;

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
	if (p == 1)
		elog(ERROR, "registered view has no updatable column");
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

static AcTriggerEntry *
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

	if (!ac_load_config(viewid, &cfg, CurrentMemoryContext))
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
static void
ac_check_shape(bool ok, const char *what)
{
	if (!ok)
		elog(ERROR, "%s does not match the registered view's cached description", what);
}

static void
ac_check_returned(AcTriggerEntry *e, TupleDesc desc)
{
	int			i;

	ac_check_shape(desc->natts == e->natts, "row returned by a tier");
	for (i = 0; i < e->natts; i++)
		ac_check_shape(TupleDescAttr(desc, i)->atttypid == e->types[i], "row returned by a tier");
}

static void
ac_serialization_failure(Relation view)
{
	ereport(ERROR,
			(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
			 errmsg("could not serialize access due to concurrent update"),
			 errdetail("A row of \"%s\" was changed by another transaction after this statement read it.",
					   RelationGetRelationName(view)),
			 errhint("Retry the transaction.")));
}

/* Run a prepared statement; returns the number of rows it touched. */
static uint64
ac_execute(SPIPlanPtr plan, Datum *values, char *nulls, int expected,
		   Oid tier, AclMode mode)
{
	Oid			save_userid = InvalidOid;
	int			save_sec_context = 0;
	int			save_nestlevel = 0;
	bool		as_owner;
	int			rc;

	/*
	 * The statement on the view was checked there, column by column, as the
	 * user who ran it.  The view's statements on a tier set every column and
	 * name the key and the old row in WHERE, so they run as that user only
	 * when the user holds the table-wide privileges on the tier (the table's
	 * grants are copied to the view and to both tables at registration).  A
	 * user who may write only through column privileges gets them run as the
	 * tier's owner, as a plain view reaches its table; unless row-level
	 * security applies to the user on the tier: its policies must see them.
	 */
	as_owner = pg_class_aclmask(tier, GetUserId(), mode, ACLMASK_ALL) != mode &&
		check_enable_rls(tier, InvalidOid, true) != RLS_ENABLED;
	if (!as_owner)
		rc = SPI_execute_plan(plan, values, nulls, false, 1);
	else
	{
		bool		may_read = pg_class_aclcheck(tier, GetUserId(), ACL_SELECT) == ACLCHECK_OK;
		MemoryContext oldcxt = CurrentMemoryContext;

		ac_switch_to_owner(tier, &save_userid, &save_sec_context, &save_nestlevel);
		PG_TRY();
		{
			rc = SPI_execute_plan(plan, values, nulls, false, 1);
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			/*
			 * The detail of an error raised as the owner ("Failing row
			 * contains ...", "Key (...)=(...)") shows columns the owner may
			 * read; on the table itself the user would see only the columns
			 * they may read.  Without SELECT on the whole table, the user
			 * gets the error without its detail (SQLSTATE, message, hint and
			 * context kept).
			 */
			if (may_read)
				PG_RE_THROW();
			MemoryContextSwitchTo(oldcxt);
			edata = CopyErrorData();
			FlushErrorState();
			edata->detail = NULL;
			ReThrowError(edata);
		}
		PG_END_TRY();
		ac_restore_user(save_userid, save_sec_context, save_nestlevel);
	}
	if (rc != expected)
		elog(ERROR, "SPI_execute_plan returned %s", SPI_result_code_string(rc));
	return SPI_processed;
}

/*
 * INSERT a row of the view straight into <t>_current: constraints, heap,
 * indexes, as an INSERT statement would for a table without triggers.
 * Returns false (and does nothing) when the caller lacks the table-level
 * INSERT privilege: the prepared statement then decides, with the usual
 * column-level checks and errors.
 */
static bool
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
 * row is found by its key (with the snapshot the statement would take),
 * it is still exactly the row the statement read (compared as *= does).
 * Then constraints, heap and indexes, as an UPDATE statement would for a
 * table without triggers; like it, this waits for another transaction
 * changing the row.  When that one committed a change (or the row is not
 * there, or differs), returns false having changed nothing, and the
 * prepared statements decide, with their waits and 40001s.
 */
static bool
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

	/* as the prepared statement would run: a new command and snapshot */
	PushActiveSnapshot(GetTransactionSnapshot());
	CommandCounterIncrement();
	UpdateActiveSnapshotCommandId();
	snapshot = GetActiveSnapshot();

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
		res = table_tuple_update(rel, &oldslot->tts_tid, newslot,
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
	PopActiveSnapshot();
	index_close(idx, NoLock);
	table_close(rel, NoLock);
	return res == TM_Ok;
}

/*
 * Is there a row with these key values in heap?  Scans its key index with a
 * dirty snapshot, as a unique index does: a row that another transaction is
 * inserting or deleting is waited for, then looked at again, so that two
 * transactions writing one new key into the two tables at the same time
 * cannot both succeed (each writes its row first, then checks the other
 * table: the second to check sees the first one's row).  NULL keys match
 * nothing.
 */
static bool
ac_key_exists(Oid heapid, Oid indexid, const Oid *eqprocs, int nkeys,
			  Datum *keyv, bool *keyn)
{
	Relation	rel;
	Relation	idx;
	SnapshotData dirty;
	IndexScanDesc scan;
	TupleTableSlot *slot;
	ScanKeyData skeys[INDEX_MAX_KEYS];
	bool		found;
	int			i;

	for (i = 0; i < nkeys; i++)
		if (keyn[i])
			return false;

	rel = table_open(heapid, AccessShareLock);
	idx = index_open(indexid, AccessShareLock);
	for (i = 0; i < nkeys; i++)
		ScanKeyEntryInitialize(&skeys[i], 0, i + 1, BTEqualStrategyNumber, InvalidOid,
							   idx->rd_indcollation[i], eqprocs[i], keyv[i]);
	InitDirtySnapshot(dirty);
	slot = table_slot_create(rel, NULL);
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
	ExecDropSingleTupleTableSlot(slot);
	/* keep the locks until the end of the transaction, as a scan would */
	index_close(idx, NoLock);
	table_close(rel, NoLock);
	return found;
}

static void
ac_key_violation(const char *viewname, Oid other)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("duplicate key value violates the row identity of \"%s\"", viewname),
			 errdetail("A row with the same key is already in %s.", get_rel_name(other))));
}

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
						  buf->nkeys, keyv, keyn))
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
static bool
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

/*
 * The identity key is unique within each table; keep it unique across the
 * two.  After writing a row with key values keyv into one tier, look for the
 * key in the other tier: through its key index with a dirty snapshot (see
 * ac_key_exists), else with the latest snapshot (so that a run or another
 * writer that committed meanwhile is seen, also under REPEATABLE READ).
 */
static void
ac_check_key_unique(Relation view, AcTriggerEntry *e, int other_tier,
					Datum *rowv, bool *rown)
{
	Datum		keyv[INDEX_MAX_KEYS];
	char		keyn[INDEX_MAX_KEYS];
	bool		found;
	int			rc;
	int			i;

	if (OidIsValid(e->keyindex[other_tier]))
	{
		bool		keynull[INDEX_MAX_KEYS];

		for (i = 0; i < e->nkeys; i++)
		{
			keyv[i] = rowv[e->keycols[i]];
			keynull[i] = rown[e->keycols[i]];
		}
		found = ac_key_exists(other_tier == 0 ? e->current : e->archive,
							  e->keyindex[other_tier], e->keyeqproc[other_tier],
							  e->nkeys, keyv, keynull);
	}
	else
	{
		for (i = 0; i < e->nkeys; i++)
		{
			keyv[i] = rowv[e->keycols[i]];
			keyn[i] = rown[e->keycols[i]] ? 'n' : ' ';
		}
		rc = SPI_execute_snapshot(e->tiers[other_tier].exists, keyv, keyn,
								  GetLatestSnapshot(), InvalidSnapshot,
								  true, false, 1);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_snapshot returned %s", SPI_result_code_string(rc));
		found = SPI_processed > 0;
	}
	if (found)
		ac_key_violation(RelationGetRelationName(view),
						 other_tier == 0 ? e->current : e->archive);
}

/* Did an UPDATE change the identity key? */
static bool
ac_key_changed(AcTriggerEntry *e, Datum *oldv, bool *oldn, Datum *newv, bool *newn)
{
	int			i;

	for (i = 0; i < e->nkeys; i++)
	{
		int			c = e->keycols[i];

		if (oldn[c] != newn[c] ||
			(!oldn[c] && !datumIsEqual(oldv[c], newv[c], e->typbyvals[c], e->typlens[c])))
			return true;
	}
	return false;
}

Datum
archive_cluster_view_trigger(PG_FUNCTION_ARGS)
{
	TriggerData *td;
	Relation	view;
	TupleDesc	desc;
	AcTriggerEntry *e;
	Datum	   *oldv;
	bool	   *oldn;
	Datum	   *newv;
	bool	   *newn;
	Datum	   *args;
	char	   *argn;
	HeapTuple	result = NULL;
	int			n = 0;
	int			i,
				t;

	if (!CALLED_AS_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("archive_cluster_view_trigger() was not called by the trigger manager")));
	td = (TriggerData *) fcinfo->context;
	view = td->tg_relation;
	if (!TRIGGER_FIRED_INSTEAD(td->tg_event) || !TRIGGER_FIRED_FOR_ROW(td->tg_event) ||
		view->rd_rel->relkind != RELKIND_VIEW)
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("archive_cluster_view_trigger() must be fired INSTEAD OF, FOR EACH ROW, on a view")));

	e = ac_trigger_entry(view);
	desc = RelationGetDescr(view);

	oldv = palloc(sizeof(Datum) * e->natts);
	oldn = palloc(sizeof(bool) * e->natts);
	heap_deform_tuple(td->tg_trigtuple, desc, oldv, oldn);

	/* the common INSERT: buffered, stored as given, no statement to run */
	if (TRIGGER_FIRED_BY_INSERT(td->tg_event) && e->batch_insert &&
		ac_buffer_insert(e, view, oldv, oldn))
		return PointerGetDatum(td->tg_trigtuple);

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	args = palloc(sizeof(Datum) * (2 * e->natts + e->nkeys));
	argn = palloc(2 * e->natts + e->nkeys + 1);

	if (TRIGGER_FIRED_BY_INSERT(td->tg_event))
	{
		for (i = 0; i < e->natts; i++)
		{
			if (!e->insertable[i])
				continue;
			args[n] = oldv[i];
			argn[n++] = oldn[i] ? 'n' : ' ';
		}
		if (e->direct_insert && ac_direct_insert(e, oldv, oldn))
		{
			/* stored as given: no trigger or generated column changes it */
			result = td->tg_trigtuple;
			ac_check_key_unique(view, e, 1, oldv, oldn);
		}
		else
		{
			ac_execute(e->insert, args, argn, SPI_OK_INSERT_RETURNING,
					   e->current, ACL_INSERT | ACL_SELECT);
			ac_check_returned(e, SPI_tuptable->tupdesc);
			result = SPI_copytuple(SPI_tuptable->vals[0]);
			ac_check_key_unique(view, e, 1, oldv, oldn);
		}
	}
	else
	{
		bool		is_update = TRIGGER_FIRED_BY_UPDATE(td->tg_event);

		newv = palloc(sizeof(Datum) * e->natts);
		newn = palloc(sizeof(bool) * e->natts);
		if (is_update)
		{
			heap_deform_tuple(td->tg_newtuple, desc, newv, newn);
			for (i = 0; i < e->natts; i++)
				if (e->always_identity[i] &&
					(oldn[i] != newn[i] ||
					 (!oldn[i] && !datumIsEqual(oldv[i], newv[i], e->typbyvals[i], e->typlens[i]))))
					ereport(ERROR,
							(errcode(ERRCODE_GENERATED_ALWAYS),
							 errmsg("column \"%s\" can only be updated to DEFAULT",
									NameStr(TupleDescAttr(desc, i)->attname)),
							 errdetail("Column \"%s\" is an identity column defined as GENERATED ALWAYS.",
									   NameStr(TupleDescAttr(desc, i)->attname))));
		}

		ac_pause_point("row_read", 4);
		if (is_update && e->direct_insert && OidIsValid(e->keyindex[0]) &&
			ac_direct_update(e, oldv, oldn, newv, newn))
		{
			result = td->tg_newtuple;
			if (ac_key_changed(e, oldv, oldn, newv, newn))
				ac_check_key_unique(view, e, 1, newv, newn);
		}

		for (t = 0; t < 2 && result == NULL; t++)
		{
			AcTierPlans *tier = &e->tiers[t];
			Oid			tierrel = t == 0 ? e->current : e->archive;
			bool	   *settable = t == 0 ? e->cur_settable : e->arc_settable;
			int			nkeyargs;

			/* new values (UPDATE only), then the key, then the old row */
			n = 0;
			for (i = 0; is_update && i < e->natts; i++)
			{
				if (!settable[i])
					continue;
				args[n] = newv[i];
				argn[n++] = newn[i] ? 'n' : ' ';
			}
			nkeyargs = n;
			for (i = 0; i < e->nkeys; i++)
			{
				args[n] = oldv[e->keycols[i]];
				argn[n++] = oldn[e->keycols[i]] ? 'n' : ' ';
			}
			for (i = 0; i < e->natts; i++)
			{
				args[n] = oldv[i];
				argn[n++] = oldn[i] ? 'n' : ' ';
			}

			if (is_update)
			{
				if (ac_execute(tier->update, args, argn, SPI_OK_UPDATE_RETURNING,
							   tierrel, ACL_UPDATE | ACL_SELECT) > 0)
				{
					ac_check_returned(e, SPI_tuptable->tupdesc);
					result = SPI_copytuple(SPI_tuptable->vals[0]);
					if (ac_key_changed(e, oldv, oldn, newv, newn))
						ac_check_key_unique(view, e, 1 - t, newv, newn);
				}
			}
			else if (ac_execute(tier->delete, args, argn, SPI_OK_DELETE,
								tierrel, ACL_DELETE | ACL_SELECT) > 0)
				result = td->tg_trigtuple;

			/* not touched: changed under us, or not in this tier? */
			if (result == NULL &&
				ac_execute(tier->exists, args + nkeyargs, argn + nkeyargs, SPI_OK_SELECT,
						   tierrel, ACL_SELECT) > 0)
				ac_serialization_failure(view);
		}
	}

	SPI_finish();
	return PointerGetDatum(result);
}

/*
 * archive_cluster_identity_nextval(view regclass, column_name name): the
 * default of an identity column on a registered view.  On a plain table,
 * the INSERT privilege is enough to take the next value of an identity
 * column; a nextval() default on the view would also want USAGE on the
 * sequence.  This takes the next value of <t>_current's identity sequence
 * for whoever may insert into the view (any of its columns), as INSERT into
 * the table itself would.
 */
Datum
archive_cluster_identity_nextval(PG_FUNCTION_ARGS)
{
	Oid			viewid = PG_GETARG_OID(0);
	const char *colname = NameStr(*PG_GETARG_NAME(1));
	Relation	view;
	AcTriggerEntry *e;
	AttrNumber	attnum;
	Oid			seq;

	ac_check_relation_exists(viewid);
	view = relation_open(viewid, AccessShareLock);
	attnum = get_attnum(viewid, colname);
	if (attnum <= 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						colname, RelationGetRelationName(view))));
	if (pg_class_aclcheck(viewid, GetUserId(), ACL_INSERT) != ACLCHECK_OK &&
		pg_attribute_aclcheck_all(viewid, GetUserId(), ACL_INSERT, ACLMASK_ANY) != ACLCHECK_OK)
		aclcheck_error(ACLCHECK_NO_PRIV, OBJECT_VIEW, RelationGetRelationName(view));
	e = ac_trigger_entry(view);
	seq = e->identity_seq[attnum - 1];
	relation_close(view, AccessShareLock);
	if (!OidIsValid(seq))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("column \"%s\" of the table behind view \"%s\" is not an identity column",
						colname, get_rel_name(viewid))));
	PG_RETURN_INT64(nextval_internal(seq, false));
}
