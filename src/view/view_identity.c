/*-------------------------------------------------------------------------
 *
 * view_identity.c
 *		Identity columns of a registered view: their default
 *		(archive_cluster_identity_nextval) and the check that an INSERT
 *		through the view leaves a GENERATED ALWAYS one to that default, as
 *		a table does.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "catalog/namespace.h"
#include "catalog/pg_type.h"
#include "commands/sequence.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "tcop/pquery.h"
#include "utils/acl.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "archive_cluster.h"
#include "view/view_cache.h"
#include "view/view_identity.h"
#include "base/util.h"

PG_FUNCTION_INFO_V1(archive_cluster_identity_nextval);

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
void
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
