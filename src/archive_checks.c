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

#include "archive_checks.h"
#include "archive_cluster.h"
#include "compat.h"

struct AcArchiveChecks
{
	ResultRelInfo *rri;			/* the archive, indexes opened for probes */
	EState	   *estate;
	int			ncheck;
	ExprState **check;			/* of the CHECK constraints, NULL: not enforced */
};

/*
 * Prepare the checks of the archive table of rri, whose indexes were opened
 * with ExecOpenIndices(rri, true) (unique indexes probed as ON CONFLICT
 * does).
 */
AcArchiveChecks *
ac_archive_checks_begin(ResultRelInfo *rri, EState *estate)
{
	AcArchiveChecks *c = palloc0(sizeof(AcArchiveChecks));
	TupleConstr *constr = RelationGetDescr(rri->ri_RelationDesc)->constr;
	int			i;

	c->rri = rri;
	c->estate = estate;
	c->ncheck = constr ? constr->num_check : 0;
	c->check = palloc0(sizeof(ExprState *) * Max(c->ncheck, 1));
	for (i = 0; i < c->ncheck; i++)
	{
		if (!ac_check_enforced(&constr->check[i]))
			continue;
		c->check[i] = ExecPrepareExpr((Expr *) stringToNode(constr->check[i].ccbin),
									  estate);
	}
	return c;
}

/*
 * NULL when the archive takes the row in slot (a slot of the archive);
 * else why not ("violates check constraint ..."), with the SQLSTATE an
 * INSERT would raise in *sqlstate.  A unique index is probed with a dirty
 * snapshot, waiting for a transaction that is inserting the same key.
 */
char *
ac_archive_refuses(AcArchiveChecks *c, TupleTableSlot *slot, int *sqlstate)
{
	Relation	arc = c->rri->ri_RelationDesc;
	TupleDesc	desc = RelationGetDescr(arc);
	TupleConstr *constr = desc->constr;
	ExprContext *econtext = GetPerTupleExprContext(c->estate);
	char	   *reason = NULL;
	int			i;

	for (i = 0; constr && constr->has_not_null && i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attnotnull && !att->attisdropped && slot_attisnull(slot, i + 1))
		{
			*sqlstate = ERRCODE_NOT_NULL_VIOLATION;
			return psprintf("violates the not-null constraint of column \"%s\" of \"%s\"",
							NameStr(att->attname), RelationGetRelationName(arc));
		}
	}

	econtext->ecxt_scantuple = slot;
	for (i = 0; reason == NULL && i < c->ncheck; i++)
	{
		if (c->check[i] != NULL && !ExecCheck(c->check[i], econtext))
		{
			*sqlstate = ERRCODE_CHECK_VIOLATION;
			reason = psprintf("violates check constraint \"%s\" of \"%s\"",
							  constr->check[i].ccname, RelationGetRelationName(arc));
		}
	}
	ResetExprContext(econtext);
	if (reason != NULL)
		return reason;

	for (i = 0; i < c->rri->ri_NumIndices; i++)
	{
		Relation	index = c->rri->ri_IndexRelationDescs[i];
		ItemPointerData conflict;

		if (!index->rd_index->indisunique)
			continue;
		if (!ac_check_index_constraints(c->rri, slot, c->estate, &conflict,
										list_make1_oid(RelationGetRelid(index))))
		{
			*sqlstate = ERRCODE_UNIQUE_VIOLATION;
			reason = psprintf("violates unique constraint \"%s\" of \"%s\": the archive has a row with the same key",
							  RelationGetRelationName(index), RelationGetRelationName(arc));
			break;
		}
	}
	ResetExprContext(econtext);
	return reason;
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
