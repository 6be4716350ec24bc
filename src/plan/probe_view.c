/*-------------------------------------------------------------------------
 *
 * probe_view.c
 *		View mode: may a SELECT, UPDATE or DELETE through the view be
 *		planned over <t>_current alone?
 *
 *		The view is "SELECT ... FROM <t>_current UNION ALL SELECT ... FROM
 *		<t>_archive" (register.c); the rewriter hands the planner its query
 *		as a subquery.  Yes when the statement reads the view alone (for an
 *		UPDATE or DELETE: the view, the INSTEAD OF trigger's target, and its
 *		subquery; no row locks, no CTE) and its WHERE fixes every column of
 *		the view's row identity with equalities free of the view's columns.
 *		The identity is unique across the tiers (view_keys.c checks every
 *		write through the view, and a run moves a row, it does not copy it),
 *		so a snapshot that sees the key in <t>_current sees no archived row
 *		with it.  The view's subquery is then replaced by its first branch,
 *		which the planner pulls up: a plain scan of <t>_current, which gets
 *		the probe (probe_scan.c).  The trigger finds an archived row by its
 *		identity as before.  A row written into both tables directly (by
 *		their owner, past the view) is seen once, from <t>_current.
 *
 *		Which tables are registered, and their key, is kept per backend by
 *		<t>_current's OID and forgotten when the view or a tier changes.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/transam.h"
#include "catalog/pg_class.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "optimizer/cost.h"
#include "parser/parse_relation.h"
#include "parser/parsetree.h"
#include "rewrite/prs2lock.h"
#include "utils/builtins.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "archive_cluster.h"
#include "base/util.h"
#include "plan/probe.h"
#include "registry/config.h"
#include "table/guard_indexes.h"

/* A table that may be the current tier of a registered view. */
typedef struct AcViewProbe
{
	Oid			current;		/* hash key */
	bool		valid;
	bool		registered;		/* the current tier of a view in view mode,
								 * its columns all in the archive (by name
								 * and type), neither table inherited */
	Oid			archive;
	Oid			archive_index;	/* the identity's unique index on the archive */
	bool		plain_layout;	/* current has no dropped or "missing" column */
	bool		has_checks;		/* current has CHECK constraints */
	int			nkeys;
	AttrNumber	keycur[INDEX_MAX_KEYS]; /* the identity's columns in current */
	Oid			opfamilies[INDEX_MAX_KEYS];
	Oid			opcintypes[INDEX_MAX_KEYS];
	int			curnatts;
	AttrNumber *arcof;			/* per column of current: the archive's
								 * column of that name (TopMemoryContext) */
} AcViewProbe;

static HTAB *ac_view_probes = NULL;
static uint64 ac_view_invals = 0;
static bool ac_view_looking = false;	/* filling an entry */

static void
ac_view_probe_inval(Datum arg, Oid relid)
{
	HASH_SEQ_STATUS status;
	AcViewProbe *e;

	ac_view_invals++;
	hash_seq_init(&status, ac_view_probes);
	while ((e = hash_seq_search(&status)) != NULL)
		if (relid == InvalidOid || e->current == relid || e->archive == relid)
			e->valid = false;
}

/*
 * The unique key index of rel (ac_is_key_index) on exactly the columns atts
 * in that order, with its opfamilies and input types if wanted.
 */
static Oid
ac_view_key_index(Relation rel, const AttrNumber *atts, int nkeys, Oid *opfamilies,
				  Oid *opcintypes)
{
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;
	Oid			result = InvalidOid;

	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		bool		ok = ac_is_key_index(idx) && idx->rd_index->indnkeyatts == nkeys;
		int			i;

		for (i = 0; ok && i < nkeys; i++)
			ok = idx->rd_index->indkey.values[i] == atts[i];
		if (ok)
		{
			result = RelationGetRelid(idx);
			for (i = 0; i < nkeys; i++)
			{
				if (opfamilies)
					opfamilies[i] = idx->rd_opfamily[i];
				if (opcintypes)
					opcintypes[i] = idx->rd_opcintype[i];
			}
		}
		index_close(idx, NoLock);
		if (OidIsValid(result))
			break;
	}
	list_free(indexes);
	return result;
}

/*
 * Fill arcof[] (per column of cur) with the column of arc of the same name,
 * type, typmod and collation; false if a column of cur has none.  (The
 * probe converts archived rows by name; tiers that differ, as in the middle
 * of a change made to both, do not qualify.)
 */
static bool
ac_view_names_agree(Relation cur, Relation arc, AttrNumber *arcof)
{
	TupleDesc	cdesc = RelationGetDescr(cur);
	TupleDesc	adesc = RelationGetDescr(arc);
	int			i;
	int			j;

	for (i = 0; i < cdesc->natts; i++)
	{
		Form_pg_attribute c = TupleDescAttr(cdesc, i);

		arcof[i] = 0;
		if (c->attisdropped)
			continue;
		for (j = 0; j < adesc->natts && arcof[i] == 0; j++)
		{
			Form_pg_attribute a = TupleDescAttr(adesc, j);

			if (!a->attisdropped && namestrcmp(&a->attname, NameStr(c->attname)) == 0 &&
				a->atttypid == c->atttypid && a->atttypmod == c->atttypmod &&
				a->attcollation == c->attcollation)
				arcof[i] = a->attnum;
		}
		if (arcof[i] == 0)
			return false;
	}
	return true;
}

/* Fill e for table cur: is it the current tier of a view, with what key? */
static void
ac_view_probe_fill(AcViewProbe *e, Relation cur)
{
	AcTableConfig cfg;
	Oid			save_userid;
	int			save_sec_context;
	Oid			view;
	bool		found;
	Relation	arc;
	TupleDesc	desc = RelationGetDescr(cur);
	AttrNumber *arcof;
	AttrNumber	arckeys[INDEX_MAX_KEYS];
	Oid			eqops[INDEX_MAX_KEYS];
	Oid			arcfamilies[INDEX_MAX_KEYS];
	int			i;

	/* no registry without the extension (its guard access method) */
	if (!OidIsValid(ac_guard_am()) || cur->rd_rel->relhassubclass)
		return;
	/* the registry, read as the extension's owner */
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(ac_extension_owner(),
						   save_sec_context | SECURITY_LOCAL_USERID_CHANGE);
	view = ac_registered_view_of(e->current);
	found = OidIsValid(view) && ac_load_config(view, &cfg) && !cfg.table_mode &&
		cfg.current == e->current;
	SetUserIdAndSecContext(save_userid, save_sec_context);
	SPI_finish();
	if (!found)
		return;

	e->archive = cfg.archive;
	e->plain_layout = true;
	for (i = 0; i < desc->natts; i++)
		if (TupleDescAttr(desc, i)->attisdropped || TupleDescAttr(desc, i)->atthasmissing)
			e->plain_layout = false;
	e->has_checks = desc->constr != NULL && desc->constr->num_check > 0;

	arc = table_open(cfg.archive, AccessShareLock);
	arcof = palloc(sizeof(AttrNumber) * (desc->natts + 1));
	e->nkeys = ac_identity_key(cur, e->keycur, eqops);
	if (!arc->rd_rel->relhassubclass && e->nkeys > 0 && ac_view_names_agree(cur, arc, arcof) &&
		OidIsValid(ac_view_key_index(cur, e->keycur, e->nkeys, e->opfamilies, e->opcintypes)))
	{
		for (i = 0; i < e->nkeys; i++)
			arckeys[i] = arcof[e->keycur[i] - 1];
		e->archive_index = ac_view_key_index(arc, arckeys, e->nkeys, arcfamilies, NULL);
		e->registered = OidIsValid(e->archive_index) &&
			memcmp(arcfamilies, e->opfamilies, sizeof(Oid) * e->nkeys) == 0;
	}
	table_close(arc, NoLock);
	if (e->registered)
	{
		e->curnatts = desc->natts;
		e->arcof = MemoryContextAlloc(TopMemoryContext, sizeof(AttrNumber) * (desc->natts + 1));
		memcpy(e->arcof, arcof, sizeof(AttrNumber) * (desc->natts + 1));
	}
	pfree(arcof);
}

/* The entry of table cur, filled if need be. */
static AcViewProbe *
ac_view_probe_get(Relation cur)
{
	Oid			relid = RelationGetRelid(cur);
	AcViewProbe *e;
	bool		found;

	if (ac_view_probes == NULL)
	{
		HASHCTL		ctl;

		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(AcViewProbe);
		ac_view_probes = hash_create("archive_cluster view probes", 16, &ctl,
									 HASH_ELEM | HASH_BLOBS);
		CacheRegisterRelcacheCallback(ac_view_probe_inval, (Datum) 0);
	}
	e = hash_search(ac_view_probes, &relid, HASH_ENTER, &found);
	if (!found)
	{
		memset((char *) e + sizeof(Oid), 0, sizeof(AcViewProbe) - sizeof(Oid));
		e->valid = false;
	}
	if (!e->valid)
	{
		AcViewProbe filled;
		uint64		invals = ac_view_invals;

		if (e->arcof)
			pfree(e->arcof);
		e->arcof = NULL;
		e->registered = false;
		memset(&filled, 0, sizeof(filled));
		filled.current = relid;
		ac_view_looking = true;
		PG_TRY();
		{
			ac_view_probe_fill(&filled, cur);
		}
		PG_FINALLY();
		{
			ac_view_looking = false;
		}
		PG_END_TRY();
		*e = filled;
		/* an invalidation while filling: used now, filled again next time */
		e->valid = ac_view_invals == invals;
	}
	return e;
}

/*
 * If query q is a view's "SELECT ... FROM a UNION ALL SELECT ... FROM b" (its
 * range table has the two branches, and OLD and NEW before 16),
 * each branch a plain SELECT of one table's columns in the view's order and
 * types, its first branch, a's and b's OIDs, and its second branch.
 */
static Query *
ac_view_branches(Query *q, Oid *a, Oid *b, Query **second)
{
	SetOperationStmt *op = (SetOperationStmt *) q->setOperations;
	Query	   *branch[2];
	int			i;
	ListCell   *lc;

	if (op == NULL || !IsA(op, SetOperationStmt) || op->op != SETOP_UNION || !op->all ||
		!IsA(op->larg, RangeTblRef) || !IsA(op->rarg, RangeTblRef) ||
		q->rowMarks != NIL || q->cteList != NIL)
		return NULL;
	for (i = 0; i < 2; i++)
	{
		RangeTblEntry *rte = rt_fetch(((RangeTblRef *) (i == 0 ? op->larg : op->rarg))->rtindex,
									  q->rtable);
		Query	   *s = rte->subquery;
		RangeTblEntry *rel;

		if (rte->rtekind != RTE_SUBQUERY || s == NULL || s->commandType != CMD_SELECT ||
			s->setOperations != NULL || s->hasSubLinks || s->hasAggs || s->hasWindowFuncs ||
			s->hasTargetSRFs || s->groupClause != NIL || s->havingQual != NULL ||
			s->distinctClause != NIL || s->sortClause != NIL || s->limitCount != NULL ||
			s->limitOffset != NULL || s->rowMarks != NIL || s->cteList != NIL ||
			list_length(s->rtable) != 1 || s->jointree == NULL || s->jointree->quals != NULL ||
			list_length(s->jointree->fromlist) != 1 ||
			!IsA(linitial(s->jointree->fromlist), RangeTblRef))
			return NULL;
		rel = linitial_node(RangeTblEntry, s->rtable);
		if (rel->rtekind != RTE_RELATION || rel->relkind != RELKIND_RELATION ||
			rel->tablesample != NULL || rel->securityQuals != NIL)
			return NULL;
		if (i == 0)
			*a = rel->relid;
		else
			*b = rel->relid;
		branch[i] = s;
	}
	/* the view's columns are the first branch's, as they are */
	if (list_length(q->targetList) != list_length(branch[0]->targetList))
		return NULL;
	i = 0;
	foreach(lc, q->targetList)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		TargetEntry *btle = list_nth_node(TargetEntry, branch[0]->targetList, i);

		TargetEntry *atle = list_nth_node(TargetEntry, branch[1]->targetList, i);

		if (tle->resjunk || btle->resjunk || atle->resjunk || !IsA(btle->expr, Var) ||
			!IsA(atle->expr, Var) ||
			exprType((Node *) tle->expr) != exprType((Node *) btle->expr) ||
			exprTypmod((Node *) tle->expr) != exprTypmod((Node *) btle->expr))
			return NULL;
		i++;
	}
	*second = branch[1];
	return branch[0];
}

/*
 * Does every column of the view pair the columns of current and archive as
 * the registered view does (the probe converts archived rows by name)?
 */
static bool
ac_view_pairs_ok(AcViewProbe *e, Query *first, Query *second)
{
	ListCell   *lc;
	int			i = 0;

	if (list_length(second->targetList) != list_length(first->targetList))
		return false;
	foreach(lc, first->targetList)
	{
		AttrNumber	c = ((Var *) lfirst_node(TargetEntry, lc)->expr)->varattno;
		AttrNumber	a = ((Var *) list_nth_node(TargetEntry, second->targetList, i)->expr)->varattno;

		if (c <= 0 || c > e->curnatts || e->arcof[c - 1] != a)
			return false;
		i++;
	}
	return true;
}

/* The column of current that view column col (1-based) reads, or 0. */
static AttrNumber
ac_view_current_column(Query *first, AttrNumber col)
{
	if (col <= 0 || col > list_length(first->targetList))
		return 0;
	return ((Var *) list_nth_node(TargetEntry, first->targetList, col - 1)->expr)->varattno;
}

/* Keep the permission checks of union's *OLD* (before 16) and of second's table. */
static void
ac_probe_keep_checks(Query *parse, Query *union_query, Query *second)
{
	RangeTblEntry *arcrte = copyObject(linitial_node(RangeTblEntry, second->rtable));

#if PG_VERSION_NUM < 160000
	RangeTblEntry *old = rt_fetch(PRS2_OLD_VARNO, union_query->rtable);

	if (old->rtekind == RTE_RELATION && old->requiredPerms != 0)
		parse->rtable = lappend(parse->rtable, copyObject(old));
#else
	if (arcrte->perminfoindex != 0)
	{
		RTEPermissionInfo *pi = getRTEPermissionInfo(second->rteperminfos, arcrte);

		parse->rteperminfos = lappend(parse->rteperminfos, copyObject(pi));
		arcrte->perminfoindex = list_length(parse->rteperminfos);
	}
#endif
	arcrte->inh = false;
	parse->rtable = lappend(parse->rtable, arcrte);
}

bool
ac_probe_view_target(Query *parse, AcProbeTarget *target)
{
	Index		k;
	RangeTblEntry *rte;
	Query	   *first;
	Query	   *second;
	Oid			cur = InvalidOid;
	Oid			arc = InvalidOid;
	Relation	rel;
	AcViewProbe *e;
	List	   *conjuncts;
	bool		ok;
	int			i;

	if (parse->utilityStmt != NULL || parse->rowMarks != NIL || parse->cteList != NIL ||
		parse->setOperations != NULL || parse->hasModifyingCTE || parse->jointree == NULL ||
		list_length(parse->jointree->fromlist) != 1 ||
		!IsA(linitial(parse->jointree->fromlist), RangeTblRef) || ac_view_looking)
		return false;
	k = ((RangeTblRef *) linitial(parse->jointree->fromlist))->rtindex;
	if (parse->commandType == CMD_SELECT)
	{
		if (list_length(parse->rtable) != 1)
			return false;
	}
	else if (parse->commandType == CMD_UPDATE || parse->commandType == CMD_DELETE)
	{
		RangeTblEntry *target_rte;

		if (list_length(parse->rtable) != 2 || parse->resultRelation == k ||
			parse->onConflict != NULL)
			return false;
		target_rte = rt_fetch(parse->resultRelation, parse->rtable);
		if (target_rte->rtekind != RTE_RELATION || target_rte->relkind != RELKIND_VIEW)
			return false;
	}
	else
		return false;
	rte = rt_fetch(k, parse->rtable);
	if (rte->rtekind != RTE_SUBQUERY || rte->subquery == NULL || rte->security_barrier ||
		rte->lateral || rte->securityQuals != NIL ||
		!ac_probe_quals_ok(parse->jointree->quals, k))
		return false;
	first = ac_view_branches(rte->subquery, &cur, &arc, &second);
	if (first == NULL || cur < FirstNormalObjectId)
		return false;

	/* locked by the rewriter (the view's rule) or the plan cache */
	rel = table_open(cur, NoLock);
	e = ac_view_probe_get(rel);
	table_close(rel, NoLock);
	if (!e->registered || e->archive != arc ||
		(parse->commandType != CMD_SELECT && !e->plain_layout) ||
		(e->has_checks && constraint_exclusion == CONSTRAINT_EXCLUSION_ON) ||
		!ac_view_pairs_ok(e, first, second))
		return false;

	conjuncts = make_ands_implicit((Expr *) parse->jointree->quals);
	ok = true;
	for (i = 0; i < e->nkeys && ok; i++)
	{
		ListCell   *lc;

		ok = false;
		foreach(lc, conjuncts)
		{
			AttrNumber	col = ac_probe_equality(lfirst(lc), k, e->opfamilies[i],
												e->opcintypes[i], NULL, NULL);

			if (col != 0 && ac_view_current_column(first, col) == e->keycur[i])
			{
				ok = true;
				break;
			}
		}
	}
	if (!ok)
		return false;

	/* the two tables are read nowhere else in the statement */
	if (!ac_probe_references(parse, cur, 1, arc, 1))
		return false;

	/*
	 * The view's subquery is its first branch from now on.  The permission
	 * checks of what goes stay, on entries of the range table that no join
	 * reads: the archive's (the probe reads it), and before 16 the view's
	 * own, which the rewriter moved to *OLD* of the view's query.
	 */
	ac_probe_keep_checks(parse, rte->subquery, second);
	rte->subquery = first;
	target->first = cur;
	target->archive = arc;
	target->archive_index = e->archive_index;
	target->check_index = InvalidOid;
	target->check_values = NIL;
	target->nkeys = e->nkeys;
	memcpy(target->attnos, e->keycur, sizeof(AttrNumber) * e->nkeys);
	memcpy(target->opfamilies, e->opfamilies, sizeof(Oid) * e->nkeys);
	memcpy(target->opcintypes, e->opcintypes, sizeof(Oid) * e->nkeys);
	return true;
}
