/*-------------------------------------------------------------------------
 *
 * constraints.c
 *		Constraints that archive_cluster cannot keep across the two tiers of
 *		a registered table, refused when the table is registered and
 *		checked again before every run (DDL may add them later):
 *		- a unique index or exclusion constraint other than the row
 *		  identity: each tier's index sees its own rows only, and only the
 *		  row identity is kept unique across tiers (view_keys.c); a value
 *		  written to one tier that the other holds would be accepted, and
 *		  then stop every run that tries to move it.  An index on a
 *		  superset of the identity's columns is unique whenever the identity
 *		  is, so it is allowed.
 *		- a foreign key that references the table: a run deletes rows from
 *		  <t>_current without the foreign key's triggers, which would leave
 *		  the referencing rows dangling.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_index.h"
#include "commands/trigger.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "archive_cluster.h"
#include "constraints.h"

/* Does the index's key contain every column of the row identity? */
static bool
ac_covers_identity(Relation idx, const AttrNumber *keys, int nkeys)
{
	Form_pg_index ix = idx->rd_index;
	int			i,
				j;

	for (i = 0; i < nkeys; i++)
	{
		bool		found = false;

		for (j = 0; j < ix->indnkeyatts && !found; j++)
			found = ix->indkey.values[j] == keys[i];
		if (!found)
			return false;
	}
	return true;
}

/*
 * Error out if rel (the table being registered, or a tier of the registered
 * table "tablename" before a run) has a unique index or exclusion
 * constraint that only holds within the tier.
 */
void
ac_check_unique_indexes(Relation rel, const char *tablename, bool registering)
{
	AttrNumber	keys[INDEX_MAX_KEYS];
	Oid			eqops[INDEX_MAX_KEYS];
	int			nkeys = ac_identity_key(rel, keys, eqops);
	List	   *indexes = RelationGetIndexList(rel);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Relation	idx = index_open(lfirst_oid(lc), AccessShareLock);
		Form_pg_index ix = idx->rd_index;
		bool		refused;

		refused = ix->indisexclusion ||
			(ix->indisunique && (nkeys == 0 || !ac_covers_identity(idx, keys, nkeys)));
		if (refused)
			ereport(ERROR,
					(errcode(registering ? ERRCODE_FEATURE_NOT_SUPPORTED :
							 ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 registering ?
					 errmsg("cannot register table \"%s\" because of %s \"%s\"",
							tablename,
							ix->indisexclusion ? "exclusion constraint" : "unique index",
							RelationGetRelationName(idx)) :
					 errmsg("cannot archive rows of \"%s\" because of %s \"%s\" on \"%s\"",
							tablename,
							ix->indisexclusion ? "exclusion constraint" : "unique index",
							RelationGetRelationName(idx), RelationGetRelationName(rel)),
					 errdetail("archive_cluster keeps only the row identity unique across the current and archive tables; this index would hold within each table alone."),
					 errhint("Drop the index or its constraint, or make its columns include the row identity's.")));
		index_close(idx, AccessShareLock);
	}
	list_free(indexes);
}

/*
 * Error out if a foreign key references rel (the table being registered, or
 * the current tier of "tablename" before a run).  rel must be locked ROW
 * EXCLUSIVE at least, which keeps new foreign keys out until the end of the
 * transaction.
 */
void
ac_check_referencing_keys(Relation rel, const char *tablename, bool registering)
{
	TriggerDesc *trigdesc = rel->trigdesc;
	int			i;

	for (i = 0; trigdesc != NULL && i < trigdesc->numtriggers; i++)
	{
		Trigger    *trig = &trigdesc->triggers[i];
		HeapTuple	tup;
		Form_pg_constraint con;
		char	   *conname;
		char	   *referencing;

		if (RI_FKey_trigger_type(trig->tgfoid) != RI_TRIGGER_PK ||
			!OidIsValid(trig->tgconstraint))
			continue;
		tup = SearchSysCache1(CONSTROID, ObjectIdGetDatum(trig->tgconstraint));
		if (!HeapTupleIsValid(tup))
			continue;
		con = (Form_pg_constraint) GETSTRUCT(tup);
		conname = pstrdup(NameStr(con->conname));
		referencing = get_rel_name(con->conrelid);
		ReleaseSysCache(tup);
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 registering ?
				 errmsg("cannot register table \"%s\" because foreign key \"%s\" on \"%s\" references it",
						tablename, conname, referencing ? referencing : "?") :
				 errmsg("cannot archive rows of \"%s\" because foreign key \"%s\" on \"%s\" references \"%s\"",
						tablename, conname, referencing ? referencing : "?",
						RelationGetRelationName(rel)),
				 registering ?
				 errhint("A foreign key cannot reference a view; drop the foreign key first.") :
				 errhint("A run deletes rows from \"%s\" without checking foreign keys that reference it; drop the foreign key.",
						 RelationGetRelationName(rel))));
	}
}
