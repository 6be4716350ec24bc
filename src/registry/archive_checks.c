/*-------------------------------------------------------------------------
 *
 * archive_checks.c
 *		Would <t>_archive refuse this row?  The constraints a row must meet
 *		to be inserted into the archive table (NOT NULL, CHECK, unique
 *		indexes), checked one row at a time without raising an error, so
 *		that a run can leave the rows the archive refuses in <t>_current,
 *		say which constraint and which key, and move the others
 *		(mover.c, after a batch failed on such a row).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_index.h"
#include "executor/executor.h"
#include "lib/stringinfo.h"
#include "nodes/pg_list.h"
#include "utils/builtins.h"
#include "utils/errcodes.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "registry/archive_checks.h"
#include "archive_cluster.h"
#include "compat.h"
#include "base/util.h"

struct AcArchiveChecks
{
	ResultRelInfo *rri;			/* the archive, indexes opened for probes */
	EState	   *estate;
	int			ncheck;
	ExprState **check;			/* of the CHECK constraints, NULL: not enforced */
	List	  **arbiter;		/* per index: a list of its OID, NIL: not probed */
};

/*
 * Prepare the checks of the archive table of rri, whose indexes were opened
 * with ExecOpenIndices(rri, true) (unique indexes probed as ON CONFLICT
 * does), in the current memory context, which must last as long as they
 * are used.
 */
AcArchiveChecks *
ac_archive_checks_begin(ResultRelInfo *rri, EState *estate)
{
	AcArchiveChecks *c = palloc0(sizeof(AcArchiveChecks));
	Relation	arc = rri->ri_RelationDesc;
	TupleConstr *constr = RelationGetDescr(arc)->constr;
	int			i;

	c->rri = rri;
	c->estate = estate;
	c->ncheck = constr ? constr->num_check : 0;
	c->check = palloc0(sizeof(ExprState *) * Max(c->ncheck, 1));
	for (i = 0; i < c->ncheck; i++)
	{
		Node	   *expr;

		if (!ac_check_enforced(&constr->check[i]))
			continue;
		expr = ac_expand_virtual_columns(stringToNode(constr->check[i].ccbin), arc);
		c->check[i] = ExecPrepareExpr((Expr *) expr, estate);
	}

	/*
	 * The unique indexes an INSERT checks at once: not one being built
	 * concurrently (not ready for inserts), nor a deferrable one (a run
	 * refuses those by itself).
	 */
	c->arbiter = palloc0(sizeof(List *) * Max(rri->ri_NumIndices, 1));
	for (i = 0; i < rri->ri_NumIndices; i++)
	{
		Relation	index = rri->ri_IndexRelationDescs[i];
		IndexInfo  *ii = rri->ri_IndexRelationInfo[i];

		if (index->rd_index->indisunique && index->rd_index->indimmediate &&
			ii->ii_ReadyForInserts)
			c->arbiter[i] = list_make1_oid(RelationGetRelid(index));
	}
	return c;
}

/*
 * AC_TAKES when the archive takes the row in slot (a slot of the archive);
 * else why not, with the constraint's name in *constraint (of the relation
 * cache: copy it to keep it).  A unique index is probed with a dirty
 * snapshot, waiting for a transaction that is inserting the same key.
 * Allocates in the current memory context: call it in one reset per row.
 */
AcRefusal
ac_archive_refuses(AcArchiveChecks *c, TupleTableSlot *slot, const char **constraint)
{
	Relation	arc = c->rri->ri_RelationDesc;
	TupleDesc	desc = RelationGetDescr(arc);
	TupleConstr *constr = desc->constr;
	ExprContext *econtext = GetPerTupleExprContext(c->estate);
	AcRefusal	result = AC_TAKES;
	int			i;

	for (i = 0; constr && constr->has_not_null && i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		/* a virtual generated column is stored as null: left to the run */
		if (att->attnotnull && !att->attisdropped && !ac_att_is_virtual(att) &&
			slot_attisnull(slot, i + 1))
		{
			*constraint = NameStr(att->attname);
			return AC_REFUSED_NOT_NULL;
		}
	}

	econtext->ecxt_scantuple = slot;
	for (i = 0; result == AC_TAKES && i < c->ncheck; i++)
	{
		if (c->check[i] != NULL && !ExecCheck(c->check[i], econtext))
		{
			*constraint = constr->check[i].ccname;
			result = AC_REFUSED_CHECK;
		}
	}
	ResetExprContext(econtext);

	for (i = 0; result == AC_TAKES && i < c->rri->ri_NumIndices; i++)
	{
		ItemPointerData conflict;

		if (c->arbiter[i] != NIL &&
			!ac_check_index_constraints(c->rri, slot, c->estate, &conflict, c->arbiter[i]))
		{
			*constraint = RelationGetRelationName(c->rri->ri_IndexRelationDescs[i]);
			result = AC_REFUSED_UNIQUE;
		}
	}
	ResetExprContext(econtext);
	return result;
}

/*
 * Why the archive "arcname" refuses the row with key "key", as a full
 * sentence: the DETAIL of the run's WARNING, and archive_cluster_runs'
 * left_behind.
 */
char *
ac_refusal_text(AcRefusal refusal, const char *key, const char *constraint,
				const char *arcname)
{
	switch (refusal)
	{
		case AC_REFUSED_NOT_NULL:
			return psprintf(_("Key %s has a null value in column \"%s\", which is NOT NULL in \"%s\"."),
							key, constraint, arcname);
		case AC_REFUSED_CHECK:
			return psprintf(_("Key %s violates check constraint \"%s\" of \"%s\"."),
							key, constraint, arcname);
		case AC_REFUSED_UNIQUE:
			return psprintf(_("Key %s is already in \"%s\" (unique constraint \"%s\")."),
							key, arcname, constraint);
		case AC_TAKES:
			break;
	}
	return NULL;
}

/* The SQLSTATE an INSERT into the archive would raise. */
int
ac_refusal_sqlstate(AcRefusal refusal)
{
	switch (refusal)
	{
		case AC_REFUSED_NOT_NULL:
			return ERRCODE_NOT_NULL_VIOLATION;
		case AC_REFUSED_CHECK:
			return ERRCODE_CHECK_VIOLATION;
		case AC_REFUSED_UNIQUE:
			return ERRCODE_UNIQUE_VIOLATION;
		case AC_TAKES:
			break;
	}
	return ERRCODE_SUCCESSFUL_COMPLETION;
}

/*
 * The row identity of the row in slot, as "(col, ...)=(value, ...)", the
 * way PostgreSQL's own errors show a key; "(unknown)" without one.
 */
char *
ac_row_key(Relation rel, TupleTableSlot *slot)
{
	AttrNumber	keys[INDEX_MAX_KEYS];
	Oid			eqops[INDEX_MAX_KEYS];
	int			nkeys = ac_identity_key(rel, keys, eqops);
	StringInfoData names;
	StringInfoData values;
	int			i;

	if (nkeys == 0)
		return pstrdup("(unknown)");
	initStringInfo(&names);
	initStringInfo(&values);
	for (i = 0; i < nkeys; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), keys[i] - 1);
		bool		isnull;
		Datum		value = slot_getattr(slot, keys[i], &isnull);

		if (i > 0)
		{
			appendStringInfoString(&names, ", ");
			appendStringInfoString(&values, ", ");
		}
		appendStringInfoString(&names, quote_identifier(NameStr(att->attname)));
		if (isnull)
			appendStringInfoString(&values, "null");
		else
		{
			Oid			outfunc;
			bool		varlena;

			getTypeOutputInfo(att->atttypid, &outfunc, &varlena);
			appendStringInfoString(&values, OidOutputFunctionCall(outfunc, value));
		}
	}
	return psprintf("(%s)=(%s)", names.data, values.data);
}
