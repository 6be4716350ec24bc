/*-------------------------------------------------------------------------
 *
 * probe_quals.c
 *		What the candidates (probe_table.c, probe_view.c) and the custom scan
 *		(probe_scan.c) look for in a query: "key column = value" with a value
 *		computed once, quals that are all about the row, system columns, and
 *		how often a table is read anywhere in the query.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/stratnum.h"
#include "access/sysattr.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "utils/lsyscache.h"

#include "plan/probe.h"

/* The attribute of relation varno that expr is (under a binary coercion), or 0. */
static AttrNumber
ac_probe_column(Node *expr, Index varno)
{
	while (IsA(expr, RelabelType))
		expr = (Node *) ((RelabelType *) expr)->arg;
	if (IsA(expr, Var) && ((Var *) expr)->varno == varno &&
		((Var *) expr)->varlevelsup == 0 && ((Var *) expr)->varattno > 0)
		return ((Var *) expr)->varattno;
	return 0;
}

/* May expr be a key value: computed once, free of the row's columns? */
static bool
ac_probe_value(Node *expr)
{
	return !contain_vars_of_level(expr, 0) && !contain_volatile_functions(expr) &&
		!expression_returns_set(expr);
}

/*
 * If clause is "column = value" (either way round), the column of relation
 * varno, with an equality operator of btree opfamily whose left type is
 * opcintype (the index column's), and a deterministic collation: the column;
 * else 0.  *value gets the other side, *opno the operator with the column on
 * its left.
 */
AttrNumber
ac_probe_equality(Node *clause, Index varno, Oid opfamily, Oid opcintype, Node **value,
				  Oid *opno)
{
	OpExpr	   *op = (OpExpr *) clause;
	AttrNumber	att;
	Node	   *other;
	Oid			oper;
	int			strategy;
	Oid			lefttype;
	Oid			righttype;

	if (!IsA(clause, OpExpr) || list_length(op->args) != 2)
		return 0;
	if (OidIsValid(op->inputcollid) && !get_collation_isdeterministic(op->inputcollid))
		return 0;
	if ((att = ac_probe_column(linitial(op->args), varno)) != 0)
	{
		other = lsecond(op->args);
		oper = op->opno;
	}
	else if ((att = ac_probe_column(lsecond(op->args), varno)) != 0)
	{
		other = linitial(op->args);
		oper = get_commutator(op->opno);
	}
	else
		return 0;
	if (!OidIsValid(oper) || !ac_probe_value(other) || !op_in_opfamily(oper, opfamily))
		return 0;
	get_op_opfamily_properties(oper, opfamily, false, &strategy, &lefttype, &righttype);
	if (strategy != BTEqualStrategyNumber || lefttype != opcintype)
		return 0;
	if (value)
		*value = other;
	if (opno)
		*opno = oper;
	return att;
}

/*
 * Is every top-level conjunct of quals about the row (no gating qual, which
 * the planner would put above the wrapped scan)?
 */
bool
ac_probe_quals_ok(Node *quals, Index varno)
{
	ListCell   *lc;

	if (quals == NULL)
		return false;
	foreach(lc, make_ands_implicit((Expr *) quals))
		if (!contain_vars_of_level(lfirst(lc), 0))
			return false;
	return true;
}

static bool
ac_probe_sysattr_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var))
		return ((Var *) node)->varattno < 0 &&
			((Var *) node)->varattno != TableOidAttributeNumber;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, ac_probe_sysattr_walker, context, 0);
	return expression_tree_walker(node, ac_probe_sysattr_walker, context);
}

/* Does the query read a system column other than tableoid? */
bool
ac_probe_reads_sysattr(Query *parse)
{
	return query_tree_walker(parse, ac_probe_sysattr_walker, NULL, 0);
}

typedef struct AcRefCount
{
	Oid			relids[2];
	int			counts[2];
} AcRefCount;

static bool
ac_probe_refs_walker(Node *node, AcRefCount *c)
{
	if (node == NULL)
		return false;
	if (IsA(node, RangeTblEntry))
	{
		RangeTblEntry *rte = (RangeTblEntry *) node;

		if (rte->rtekind == RTE_RELATION)
			for (int i = 0; i < 2; i++)
				if (rte->relid == c->relids[i])
					c->counts[i]++;
		return false;
	}
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, ac_probe_refs_walker, c,
								 QTW_EXAMINE_RTES_BEFORE);
	return expression_tree_walker(node, ac_probe_refs_walker, c);
}

/*
 * Does the query read relation a exactly na times and b exactly nb times,
 * counting the entries of its range tables at every level (sub-selects and
 * subqueries included)?
 */
bool
ac_probe_references(Query *parse, Oid a, int na, Oid b, int nb)
{
	AcRefCount	c = {{a, b}, {0, 0}};

	(void) query_tree_walker(parse, ac_probe_refs_walker, &c, QTW_EXAMINE_RTES_BEFORE);
	return c.counts[0] == na && c.counts[1] == nb;
}
