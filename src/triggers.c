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
 *		tables (view_keys.c).  This file is the trigger itself, the running
 *		of the prepared statements (as the user, or as the table's owner
 *		for a user with column privileges only), the identity default and
 *		the check that an INSERT leaves a GENERATED ALWAYS identity column
 *		to it.
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
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "tcop/pquery.h"
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
#include "view_buffer.h"
#include "view_cache.h"
#include "view_direct.h"
#include "view_keys.h"
#include "tiers.h"

PG_FUNCTION_INFO_V1(archive_cluster_view_trigger);
PG_FUNCTION_INFO_V1(archive_cluster_identity_nextval);

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
 * GENERATED ALWAYS identity columns and INSERT through the view.
 *
 * On a table, the rewriter refuses a value given for such a column (428C9)
 * before the statement runs, unless OVERRIDING SYSTEM VALUE.  On the view
 * the column is an ordinary column whose default is
 * archive_cluster_identity_nextval(), and the trigger sees only the NEW row:
 * 5 taken by DEFAULT and 5 written in VALUES look alike.  So the default
 * tells the trigger: each value it takes for a GENERATED ALWAYS column is
 * kept here, in this backend, as pending for its view; the trigger accepts
 * a row's value only if it is pending for the view, and takes it off (the
 * value is used).  Anything else is refused as on a table.
 *
 * Why that is exact:
 * - PostgreSQL computes a row's defaults and fires the row's INSTEAD OF
 *   trigger before it computes the next row: one- and multi-row VALUES (a
 *   VALUES row is computed when it is fetched), INSERT ... SELECT (the
 *   default is in the INSERT's own projection, above any Sort, Limit or CTE
 *   of the SELECT), COPY (the defaults of a line, then its trigger).  So
 *   normally one value is pending, the row's own.
 * - A function called in the row's other expressions may insert into this
 *   or another registered view (nested), taking and using values between a
 *   row's default and its trigger: hence a few slots, not one; each trigger
 *   finds its own value, and a nested one never takes the outer one's
 *   (they differ: one sequence).
 * - A used value is no longer pending: giving a value equal to one the
 *   default took earlier is refused.
 * - A value whose row was never inserted stays pending: the statement failed
 *   in between (a later expression of the row, a cast, ...), or without an
 *   error (the function called by hand, another INSTEAD OF trigger of the
 *   view that skipped the row).  The values taken in a subtransaction that
 *   aborts, and all at the end of the transaction, are forgotten (the
 *   default and the trigger of one row run in the same subtransaction), so
 *   a failed statement leaves nothing behind.  The others are values the
 *   sequence handed out and nobody stored: accepting one later in the same
 *   transaction cannot collide with a value the sequence gives; and they
 *   take at most AC_PENDING_SLOTS slots, the oldest giving way.
 * - Not compared with the command id: any write of a function called in
 *   the row's other expressions advances it, and a genuine DEFAULT would be
 *   refused.
 * - COPY FROM: PostgreSQL's COPY into a table writes the values given for
 *   an identity column, GENERATED ALWAYS too (as OVERRIDING SYSTEM VALUE,
 *   documented); so does a COPY FROM the view run as a statement of its own
 *   (the active portal is that COPY, into this view).  A COPY run by a
 *   function (EXECUTE) cannot be told from an INSERT there and is refused.
 * - OVERRIDING SYSTEM VALUE on the view: PostgreSQL accepts and ignores it
 *   (a view's columns are not identity columns), nothing of it reaches the
 *   trigger; the hint says to insert into <t>_current with it instead.
 *   OVERRIDING USER VALUE is ignored too: the value given is refused.
 * The cost per row: a look at the pending slots (normally one) and a
 * comparison; the default adds an entry.
 */
#define AC_PENDING_SLOTS 8

typedef struct AcPendingIdentity
{
	Oid			view;
	int			col;			/* view column index */
	int64		value;
	SubTransactionId subid;		/* taken in this (sub)transaction */
} AcPendingIdentity;

static AcPendingIdentity ac_pending[AC_PENDING_SLOTS];
static int	ac_npending = 0;
static bool ac_pending_callbacks = false;

static void
ac_pending_remove(int i)
{
	ac_npending--;
	memmove(&ac_pending[i], &ac_pending[i + 1], sizeof(AcPendingIdentity) * (ac_npending - i));
}

static void
ac_pending_xact_callback(XactEvent event, void *arg)
{
	ac_npending = 0;
}

/*
 * A subtransaction that aborts takes its values (and those of the ones
 * inside it) with it; one that commits leaves them to its parent.
 */
static void
ac_pending_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
							SubTransactionId parentSubid, void *arg)
{
	int			i = 0;

	if (event != SUBXACT_EVENT_COMMIT_SUB && event != SUBXACT_EVENT_ABORT_SUB)
		return;
	while (i < ac_npending)
	{
		if (ac_pending[i].subid < mySubid)
			i++;
		else if (event == SUBXACT_EVENT_COMMIT_SUB)
			ac_pending[i++].subid = parentSubid;
		else
			ac_pending_remove(i);
	}
}

/* The default took value for column col of view: pending until used. */
static void
ac_pending_add(Oid view, int col, int64 value)
{
	AcPendingIdentity *p;

	if (!ac_pending_callbacks)
	{
		RegisterXactCallback(ac_pending_xact_callback, NULL);
		RegisterSubXactCallback(ac_pending_subxact_callback, NULL);
		ac_pending_callbacks = true;
	}
	/* all slots taken (by values never used): the oldest goes */
	if (ac_npending == AC_PENDING_SLOTS)
		ac_pending_remove(0);
	p = &ac_pending[ac_npending++];
	p->view = view;
	p->col = col;
	p->value = value;
	p->subid = GetCurrentSubTransactionId();
}

/* Is value pending for column col of view?  If so, it is used now. */
static bool
ac_pending_take(Oid view, int col, int64 value)
{
	int			i;

	for (i = ac_npending - 1; i >= 0; i--)
	{
		if (ac_pending[i].value == value && ac_pending[i].view == view &&
			ac_pending[i].col == col)
		{
			ac_pending_remove(i);
			return true;
		}
	}
	return false;
}

/* Is this a COPY FROM into the view, run as a statement of its own? */
static bool
ac_in_copy_from(Oid view)
{
	Portal		portal = ActivePortal;
	PlannedStmt *stmt;
	CopyStmt   *copy;

	if (portal == NULL || portal->commandTag != CMDTAG_COPY ||
		list_length(portal->stmts) != 1)
		return false;
	stmt = linitial_node(PlannedStmt, portal->stmts);
	if (stmt->commandType != CMD_UTILITY || stmt->utilityStmt == NULL ||
		!IsA(stmt->utilityStmt, CopyStmt))
		return false;
	copy = (CopyStmt *) stmt->utilityStmt;
	return copy->is_from && copy->relation != NULL &&
		RangeVarGetRelid(copy->relation, NoLock, true) == view;
}

/*
 * An INSERTed row of the view (values, nulls): its GENERATED ALWAYS identity
 * column must hold the value its default took for it (see above).
 */
static void
ac_check_always_identity(AcTriggerEntry *e, Relation view, Datum *values, bool *nulls)
{
	int			c = e->always_col;
	const char *colname;

	if (!nulls[c])
	{
		int64		value;
		bool		known = true;

		switch (e->types[c])
		{
			case INT2OID:
				value = DatumGetInt16(values[c]);
				break;
			case INT4OID:
				value = DatumGetInt32(values[c]);
				break;
			case INT8OID:
				value = DatumGetInt64(values[c]);
				break;
			default:
				/* an identity column is one of those; never taken here */
				value = 0;
				known = false;
				break;
		}
		if (known && ac_pending_take(e->view, c, value))
			return;
	}
	if (ac_in_copy_from(e->view))
		return;
	colname = NameStr(TupleDescAttr(RelationGetDescr(view), c)->attname);
	ereport(ERROR,
			(errcode(ERRCODE_GENERATED_ALWAYS),
			 errmsg("cannot insert a non-DEFAULT value into column \"%s\"", colname),
			 errdetail("Column \"%s\" is an identity column defined as GENERATED ALWAYS.",
					   colname),
			 errhint("To override, insert into table \"%s\" with OVERRIDING SYSTEM VALUE; view \"%s\" ignores that clause.",
					 get_rel_name(e->current), RelationGetRelationName(view))));
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
 * the table itself would.  For a GENERATED ALWAYS column, it also tells the
 * view's trigger that the value came from the default (see above).
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
	bool		always;
	int64		value;

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
	always = e->always_identity[attnum - 1];
	relation_close(view, AccessShareLock);
	if (!OidIsValid(seq))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("column \"%s\" of the table behind view \"%s\" is not an identity column",
						colname, get_rel_name(viewid))));
	value = nextval_internal(seq, false);
	/* the trigger accepts this value, once, for this column (see above) */
	if (always)
		ac_pending_add(viewid, attnum - 1, value);
	PG_RETURN_INT64(value);
}
