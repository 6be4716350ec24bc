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
 *		And the outgoing foreign keys, copied to the archive.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/htup_details.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "archive_cluster.h"
#include "registry/constraints.h"
#include "base/util.h"

/*
 * Does the index (its pg_index row) have every column of the row identity
 * in its key, compared with the identity's equality operator and the
 * column's collation?  Then it is unique whenever the identity is.  (A key
 * column compared more coarsely, say case-insensitively, is not.)
 */
static bool
ac_covers_identity(Relation rel, HeapTuple indextup, const AttrNumber *keys,
				   const Oid *eqops, int nkeys)
{
	Form_pg_index ix = (Form_pg_index) GETSTRUCT(indextup);
	oidvector  *indclass;
	oidvector  *indcollation;
	Datum		d;
	bool		isnull;
	int			i,
				j;

	d = SysCacheGetAttr(INDEXRELID, indextup, Anum_pg_index_indclass, &isnull);
	Assert(!isnull);
	indclass = (oidvector *) DatumGetPointer(d);
	d = SysCacheGetAttr(INDEXRELID, indextup, Anum_pg_index_indcollation, &isnull);
	Assert(!isnull);
	indcollation = (oidvector *) DatumGetPointer(d);

	for (i = 0; i < nkeys; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), keys[i] - 1);
		bool		found = false;

		for (j = 0; j < ix->indnkeyatts && !found; j++)
		{
			Oid			opfamily;
			Oid			opcintype;

			if (ix->indkey.values[j] != keys[i] ||
				indcollation->values[j] != att->attcollation)
				continue;
			opfamily = get_opclass_family(indclass->values[j]);
			opcintype = get_opclass_input_type(indclass->values[j]);
			found = get_opfamily_member(opfamily, opcintype, opcintype,
										BTEqualStrategyNumber) == eqops[i];
		}
		if (!found)
			return false;
	}
	return true;
}

/*
 * Error out if rel (the table being registered, or a tier of the registered
 * table "tablename" before a run) has a unique index or exclusion
 * constraint that only holds within the tier.  Reads pg_index through the
 * syscache, without locking the indexes: a run waits a bounded time for its
 * tables' locks only.
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
		Oid			indexoid = lfirst_oid(lc);
		HeapTuple	indextup;
		Form_pg_index ix;
		bool		exclusion;
		bool		refused;
		char	   *indexname;

		indextup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
		if (!HeapTupleIsValid(indextup))
			elog(ERROR, "cache lookup failed for index %u", indexoid);
		ix = (Form_pg_index) GETSTRUCT(indextup);
		exclusion = ix->indisexclusion;
		refused = exclusion ||
			(ix->indisunique &&
			 (nkeys == 0 || !ac_covers_identity(rel, indextup, keys, eqops, nkeys)));
		ReleaseSysCache(indextup);
		if (!refused)
			continue;

		indexname = get_rel_name(indexoid);
		if (registering && exclusion)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot register table \"%s\" because of exclusion constraint \"%s\"",
							tablename, indexname),
					 errdetail("An exclusion constraint would hold within the current and the archive table alone, not across them."),
					 errhint("Drop the constraint first.")));
		else if (registering)
			ereport(ERROR,
					(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
					 errmsg("cannot register table \"%s\" because of unique index \"%s\"",
							tablename, indexname),
					 errdetail("archive_cluster keeps only the row identity unique across the current and archive tables; this index would hold within each table alone."),
					 errhint("Drop the index or its constraint first, or include the row identity's columns in it.")));
		else if (exclusion)
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot archive rows of \"%s\" because of exclusion constraint \"%s\" on \"%s\"",
							tablename, indexname, RelationGetRelationName(rel)),
					 errdetail("An exclusion constraint would hold within the current and the archive table alone, not across them."),
					 errhint("Drop the constraint.")));
		else
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot archive rows of \"%s\" because of unique index \"%s\" on \"%s\"",
							tablename, indexname, RelationGetRelationName(rel)),
					 errdetail("archive_cluster keeps only the row identity unique across the current and archive tables; this index would hold within each table alone."),
					 errhint("Drop the index or its constraint, or include the row identity's columns in it.")));
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
				 errhint("A foreign key finds the rows it references in the table alone, never among archived rows; drop the foreign key first.") :
				 errhint("A run deletes rows from \"%s\" without checking foreign keys that reference it; drop the foreign key.",
						 RelationGetRelationName(rel))));
	}
}

/*
 * The outgoing foreign keys of relid hold for archived rows too: the same
 * constraints on the archive (qualified name qarc).  Connected to SPI.
 */
void
ac_copy_foreign_keys(Oid relid, const char *qarc)
{
	List	   *stmts = NIL;
	ListCell   *lc;
	uint64		i;
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];

	values[0] = ObjectIdGetDatum(relid);
	if (SPI_execute_with_args("SELECT c.conname, pg_catalog.pg_get_constraintdef(c.oid)"
							  " FROM pg_catalog.pg_constraint c"
							  " WHERE c.conrelid OPERATOR(pg_catalog.=) $1"
							  " AND c.contype OPERATOR(pg_catalog.=) 'f' ORDER BY c.conname",
							  1, argtypes, values, NULL, true, 0) != SPI_OK_SELECT)
		elog(ERROR, "could not read the foreign keys of relation %u", relid);
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	rowdesc = SPI_tuptable->tupdesc;

		/* the definition is deparsed SQL, its names quoted by PostgreSQL */
		stmts = lappend(stmts, psprintf("ALTER TABLE %s ADD CONSTRAINT %s %s", qarc,
										quote_identifier(SPI_getvalue(row, rowdesc, 1)),
										SPI_getvalue(row, rowdesc, 2)));
	}
	foreach(lc, stmts)
		ac_spi_exec((char *) lfirst(lc), SPI_OK_UTILITY);
}
