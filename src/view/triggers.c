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
 *		The trigger's parts, each in a file of its own: the cached columns,
 *		statements and fast-path decisions of each view (view_cache.c);
 *		INSERT and UPDATE straight on <t>_current (view_direct.c); INSERTs
 *		written in batches at the end of the statement, as COPY does
 *		(view_buffer.c); the identity key's uniqueness across the two
 *		tables (view_keys.c); identity columns: their default, and the check
 *		that an INSERT leaves a GENERATED ALWAYS one to it (view_identity.c).
 *		This file is the trigger itself and the running of the prepared
 *		statements (as the user, or as the table's owner for a user with
 *		column privileges only).
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
#include "catalog/pg_type.h"
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
#include "view/view_buffer.h"
#include "view/view_cache.h"
#include "view/view_direct.h"
#include "view/view_identity.h"
#include "view/view_keys.h"
#include "registry/tiers.h"
#include "base/util.h"

PG_FUNCTION_INFO_V1(archive_cluster_view_trigger);

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

static void
ac_spi_connect(void)
{
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
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

	if (TRIGGER_FIRED_BY_INSERT(td->tg_event) && e->always_col >= 0)
		ac_check_always_identity(e, view, oldv, oldn);

	/* the common INSERT: buffered, stored as given, no statement to run */
	if (TRIGGER_FIRED_BY_INSERT(td->tg_event) && e->batch_insert &&
		ac_buffer_insert(e, view, oldv, oldn))
		return PointerGetDatum(td->tg_trigtuple);

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
			ac_check_key_unique(view, e, 1, oldv, oldn);
			return PointerGetDatum(td->tg_trigtuple);
		}
		ac_spi_connect();
		ac_execute(e->insert, args, argn, SPI_OK_INSERT_RETURNING,
				   e->current, ACL_INSERT | ACL_SELECT);
		ac_check_returned(e, SPI_tuptable->tupdesc);
		result = SPI_copytuple(SPI_tuptable->vals[0]);
		ac_check_key_unique(view, e, 1, oldv, oldn);
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
		/* the common UPDATE of a current row: no statement to run */
		if (is_update && e->direct_insert && OidIsValid(e->keyindex[0]) &&
			ac_direct_update(e, oldv, oldn, newv, newn))
		{
			if (ac_key_changed(e, oldv, oldn, newv, newn))
				ac_check_key_unique(view, e, 1, newv, newn);
			return PointerGetDatum(td->tg_newtuple);
		}

		ac_spi_connect();
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
