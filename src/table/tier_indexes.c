/*-------------------------------------------------------------------------
 *
 * tier_indexes.c
 *		Table mode: which index of <t>_archive is the counterpart of an index
 *		of <t>, and the indexes a table-mode registration cannot keep.
 *
 *		Inheritance does not carry indexes from <t> to <t>_archive:
 *		registration creates the archive's with CREATE TABLE ... (LIKE ...
 *		INCLUDING INDEXES), and an index created on <t> later has to be
 *		created on the archive too.  Two indexes are counterparts when
 *		PostgreSQL describes them the same way apart from their names and
 *		tables: pg_get_indexdef() after "ON <table>" (access method, columns
 *		or expressions, operator classes, collations, orderings, INCLUDE,
 *		NULLS NOT DISTINCT, predicate), and both unique or both not.  The
 *		columns of <t> and of its child have the same names, so the same
 *		index reads the same.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_index.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "table/tier_indexes.h"

/*
 * pg_get_indexdef() of an index from " USING " on: what remains when the
 * "CREATE [UNIQUE] INDEX <name> ON <schema>.<table>" that ruleutils.c
 * writes first is taken off.  Computed from the names, not searched for,
 * so that no name, however hostile, can shift it.  NULL if the index is
 * gone or the text does not start as expected.
 */
static char *
ac_index_shape(Oid indexoid)
{
	HeapTuple	tup;
	Form_pg_index ix;
	Oid			heapoid;
	bool		unique;
	char	   *def;
	char	   *prefix;

	tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
	if (!HeapTupleIsValid(tup))
		return NULL;
	ix = (Form_pg_index) GETSTRUCT(tup);
	heapoid = ix->indrelid;
	unique = ix->indisunique;
	ReleaseSysCache(tup);

	def = TextDatumGetCString(OidFunctionCall1(F_PG_GET_INDEXDEF_OID,
											   ObjectIdGetDatum(indexoid)));
	prefix = psprintf("CREATE %sINDEX %s ON %s",
					  unique ? "UNIQUE " : "",
					  quote_identifier(get_rel_name(indexoid)),
					  quote_qualified_identifier(get_namespace_name(get_rel_namespace(heapoid)),
												 get_rel_name(heapoid)));
	if (strncmp(def, prefix, strlen(prefix)) != 0 ||
		strncmp(def + strlen(prefix), " USING ", 7) != 0)
		return NULL;
	return pstrdup(def + strlen(prefix));
}

/*
 * The index of "other" that is the counterpart of index indexoid (of the
 * other tier), InvalidOid if none.  A unique index's counterpart must be
 * valid: it is probed for the keys of the other tier.
 */
Oid
ac_index_counterpart(Oid indexoid, Relation other)
{
	char	   *shape = ac_index_shape(indexoid);
	List	   *indexes;
	ListCell   *lc;
	Oid			result = InvalidOid;

	if (shape == NULL)
		return InvalidOid;
	indexes = RelationGetIndexList(other);
	foreach(lc, indexes)
	{
		Oid			candidate = lfirst_oid(lc);
		HeapTuple	tup;
		bool		usable;
		char	   *cshape;

		tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(candidate));
		if (!HeapTupleIsValid(tup))
			continue;
		usable = ((Form_pg_index) GETSTRUCT(tup))->indisvalid &&
			((Form_pg_index) GETSTRUCT(tup))->indislive;
		ReleaseSysCache(tup);
		if (!usable)
			continue;
		cshape = ac_index_shape(candidate);
		if (cshape != NULL && strcmp(cshape, shape) == 0)
		{
			result = candidate;
			break;
		}
	}
	list_free(indexes);
	return result;
}

/*
 * Error out if table <t> (parent, registered in table mode or being
 * registered) has an index the two tiers cannot keep together: an
 * exclusion constraint (it would hold within each tier alone), a deferrable
 * unique constraint (the check across tiers is immediate), or, unless
 * registering (the archive is created with all of them), an index without
 * its counterpart on the archive, or a unique index that is not valid.
 */
void
ac_check_tier_indexes(Relation parent, Relation archive, bool registering)
{
	const char *relname = RelationGetRelationName(parent);
	List	   *indexes = RelationGetIndexList(parent);
	ListCell   *lc;

	foreach(lc, indexes)
	{
		Oid			indexoid = lfirst_oid(lc);
		HeapTuple	tup;
		Form_pg_index ix;
		bool		exclusion;
		bool		deferrable;
		bool		ready;
		bool		live;
		bool		ix_valid;
		bool		unique;

		tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(indexoid));
		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for index %u", indexoid);
		ix = (Form_pg_index) GETSTRUCT(tup);
		exclusion = ix->indisexclusion;
		deferrable = ix->indisunique && !ix->indimmediate;
		ready = ix->indisvalid && ix->indislive;
		live = ix->indislive;
		ix_valid = ix->indisvalid;
		unique = ix->indisunique;
		ReleaseSysCache(tup);

		if (exclusion)
			ereport(ERROR,
					(errcode(registering ? ERRCODE_FEATURE_NOT_SUPPORTED :
							 ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 registering ?
					 errmsg("cannot register table \"%s\" because of exclusion constraint \"%s\"",
							relname, get_rel_name(indexoid)) :
					 errmsg("cannot archive rows of \"%s\" because of exclusion constraint \"%s\"",
							relname, get_rel_name(indexoid)),
					 errdetail("An exclusion constraint would hold within the table and its archive alone, not across them."),
					 errhint("Drop the constraint.")));
		if (deferrable)
			ereport(ERROR,
					(errcode(registering ? ERRCODE_FEATURE_NOT_SUPPORTED :
							 ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 registering ?
					 errmsg("cannot register table \"%s\" because of deferrable unique constraint \"%s\"",
							relname, get_rel_name(indexoid)) :
					 errmsg("cannot archive rows of \"%s\" because of deferrable unique constraint \"%s\"",
							relname, get_rel_name(indexoid)),
					 errdetail("Uniqueness across the table and its archive is checked at once, not at commit."),
					 errhint("Make the constraint NOT DEFERRABLE.")));
		if (registering)
			continue;

		/*
		 * A unique index of <t> being built (CREATE INDEX or REINDEX
		 * CONCURRENTLY), or left invalid by one that failed, lacks entries
		 * for some rows: a writer of <t> does not wait for a run moving such
		 * a row's key to the archive, and could give <t> the key while the
		 * archive gets it.
		 */
		if (unique && live && !ix_valid)
		{
			/*
			 * Being built now: CREATE INDEX CONCURRENTLY and REINDEX
			 * CONCURRENTLY hold <t>'s SHARE UPDATE EXCLUSIVE lock until
			 * done.  A later run goes on (the worker logs it, as a lock
			 * not granted).  Else an invalid index that a failed build left:
			 * an error until someone deals with it.
			 */
			Oid			parentid = RelationGetRelid(parent);
			bool		building = !ConditionalLockRelationOid(parentid, ShareUpdateExclusiveLock);

			if (!building)
				UnlockRelationOid(parentid, ShareUpdateExclusiveLock);
			if (building)
				ereport(ERROR,
						(errcode(ERRCODE_LOCK_NOT_AVAILABLE),
						 errmsg("cannot archive rows of \"%s\" while its unique index \"%s\" is being built",
								relname, get_rel_name(indexoid)),
						 errdetail("Until the index is valid it may lack entries of rows of \"%s\", and cannot keep their keys unique across the table and its archive while they are moved.",
								   relname),
						 errhint("A later run will archive them once the index is built.")));
			ereport(ERROR,
					(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
					 errmsg("cannot archive rows of \"%s\" while its unique index \"%s\" is not valid",
							relname, get_rel_name(indexoid)),
					 errdetail("Until the index is valid it may lack entries of rows of \"%s\", and cannot keep their keys unique across the table and its archive while they are moved.",
							   relname),
					 errhint("Drop the invalid index that a failed CREATE INDEX CONCURRENTLY or REINDEX CONCURRENTLY left, or rebuild it with REINDEX INDEX CONCURRENTLY.")));
		}
		/* a non-unique one being built: looked at once done */
		if (!ready || OidIsValid(ac_index_counterpart(indexoid, archive)))
			continue;
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("index \"%s\" of \"%s\" has no counterpart on \"%s\"",
						get_rel_name(indexoid), relname, RelationGetRelationName(archive)),
				 errdetail("Rows moved to the archive would not be in the index%s.",
						   unique ? ", nor kept unique across the table and its archive" : ""),
				 errhint("Create the same index on \"%s\" too.",
						 RelationGetRelationName(archive))));
	}
	list_free(indexes);
}
