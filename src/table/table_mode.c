/*-------------------------------------------------------------------------
 *
 * table_mode.c
 *		Registering a table in table mode, and unregistering it: <t> stays
 *		the table it is (same OID, name, indexes, grants, triggers) and its
 *		own rows are the current tier (ONLY <t>); <t>_archive is created as
 *		its inheritance child, so that every statement on <t> sees both
 *		tiers, and row locks, ON CONFLICT, MERGE and concurrent updates work
 *		as on any table.  Called by register.c and unregister.c, which check
 *		the arguments and the table, take the locks and record or forget the
 *		configuration.
 *
 *		The archive has the columns of <t> (inheritance), its defaults,
 *		CHECK and NOT NULL constraints, indexes and outgoing foreign keys,
 *		and no privileges: statements on <t> reach its rows with <t>'s.
 *		Both tiers get a guard index on the columns of the row identity
 *		(the primary key) and the age column, which has each row written
 *		to them checked against the other tier, so that <t>'s unique
 *		indexes hold across both (tier_guard.c, tier_unique.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_trigger.h"
#include "commands/defrem.h"
#include "commands/tablespace.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "archive_cluster.h"
#include "registry/constraints.h"
#include "registry/replication.h"
#include "table/table_mode.h"
#include "table/guard_indexes.h"
#include "table/tier_indexes.h"
#include "base/util.h"

/* Add column name to the guard's columns cols and to its name's label. */
static void
ac_guard_column(const char *name, StringInfo cols, StringInfo label)
{
	appendStringInfo(cols, "%s%s", cols->len > 0 ? ", " : "", quote_identifier(name));
	/* as PostgreSQL names indexes: names up to NAMEDATALEN, then no more */
	if (label != NULL && label->len < NAMEDATALEN)
		appendStringInfo(label, "%s%s", label->len > 0 ? "_" : "", name);
}

/*
 * The columns of tier rel's guard index (tier_guard.c): those of its row
 * identity if it has one (ac_identity_key: the primary key), so that the
 * guard is given each row's key and, when the key is beyond the archive's,
 * has nothing to look up and no row to read again; and the age column
 * agecol, which then cannot be dropped alone either.  Into cols quoted and
 * comma-separated; into label, if not NULL, joined by "_" for the index's
 * name, as PostgreSQL names indexes.
 */
static void
ac_guard_columns(Relation rel, const char *agecol, StringInfo cols, StringInfo label)
{
	AttrNumber	keys[INDEX_MAX_KEYS];
	Oid			eqops[INDEX_MAX_KEYS];
	int			nkeys = ac_identity_key(rel, keys, eqops);
	bool		age_in_key = false;
	int			i;

	for (i = 0; i < nkeys; i++)
	{
		const char *name = NameStr(TupleDescAttr(RelationGetDescr(rel), keys[i] - 1)->attname);

		ac_guard_column(name, cols, label);
		age_in_key |= strcmp(name, agecol) == 0;
	}
	if (!age_in_key)
		ac_guard_column(agecol, cols, label);
}

/*
 * Error out unless tier rel has its guard index, which has the rows written
 * to it checked against the other tier (tier_guard.c).
 */
static void
ac_check_guard(Relation rel, const char *agecol)
{
	StringInfoData cols;

	if (ac_guard_present(rel))
		return;
	initStringInfo(&cols);
	ac_guard_columns(rel, agecol, &cols, NULL);
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("\"%s\" has no index of access method %s",
					RelationGetRelationName(rel), AC_GUARD_AM),
			 errdetail("Its guard index keeps the unique indexes of a table registered in table mode unique across the table and its archive."),
			 errhint("Create it again with CREATE INDEX ON %s USING %s (%s), and look for duplicates written while it was missing.",
					 quote_qualified_identifier(get_namespace_name(RelationGetNamespace(rel)),
												RelationGetRelationName(rel)),
					 AC_GUARD_AM, cols.data)));
}

/*
 * What table mode refuses beyond view mode's common requirements: indexes
 * the tiers cannot keep together (tier_indexes.c), and row-level triggers
 * of the user: they would not fire for archived rows, which statements on
 * <t> change in <t>_archive.  Also checked before each run.
 */
void
ac_table_mode_check(Relation rel, Relation archive, const char *agecol, bool registering)
{
	TriggerDesc *trigdesc = rel->trigdesc;
	int			i;

	ac_check_tier_indexes(rel, archive, registering);
	if (!registering)
	{
		ac_check_guard(rel, agecol);
		ac_check_guard(archive, agecol);
	}
	for (i = 0; trigdesc != NULL && i < trigdesc->numtriggers; i++)
	{
		Trigger    *trig = &trigdesc->triggers[i];

		if (trig->tgisinternal || !TRIGGER_FOR_ROW(trig->tgtype))
			continue;
		ereport(ERROR,
				(errcode(registering ? ERRCODE_FEATURE_NOT_SUPPORTED :
						 ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 registering ?
				 errmsg("cannot register table \"%s\" in table mode because of row-level trigger \"%s\"",
						RelationGetRelationName(rel), trig->tgname) :
				 errmsg("cannot archive rows of \"%s\" because of row-level trigger \"%s\"",
						RelationGetRelationName(rel), trig->tgname),
				 errdetail("A row-level trigger of \"%s\" does not fire for rows in its archive.",
						   RelationGetRelationName(rel)),
				 errhint("Register the table in view mode, or drop the trigger first.")));
	}
}

/*
 * The guard index of tier relid (tier_guard.c), on the columns of its row
 * identity and age column agecol: named as PostgreSQL names indexes, with
 * the access method's name as its label.
 */
static void
ac_create_guard(Oid relid, const char *agecol)
{
	Relation	rel = table_open(relid, AccessShareLock);
	Oid			nsp = RelationGetNamespace(rel);
	char	   *relname = pstrdup(RelationGetRelationName(rel));
	StringInfoData cols;
	StringInfoData label;
	char	   *name;

	initStringInfo(&cols);
	initStringInfo(&label);
	ac_guard_columns(rel, agecol, &cols, &label);
	table_close(rel, AccessShareLock);
	name = ChooseRelationName(relname, label.data, AC_GUARD_AM, nsp, false);
	ac_spi_exec(psprintf("CREATE INDEX %s ON %s USING %s (%s)",
						 quote_identifier(name),
						 quote_qualified_identifier(get_namespace_name(nsp), relname),
						 quote_identifier(AC_GUARD_AM), cols.data),
				SPI_OK_UTILITY);
}

static void
ac_drop_guards(List *guards)
{
	ListCell   *lc;

	foreach(lc, guards)
		ac_spi_exec(psprintf("DROP INDEX %s",
							 quote_qualified_identifier(get_namespace_name(get_rel_namespace(lfirst_oid(lc))),
														get_rel_name(lfirst_oid(lc)))),
					SPI_OK_UTILITY);
}

/*
 * Create <t>_archive for table relid as its inheritance child, and the
 * guard indexes of both, with age column agecol.  Runs as the table's
 * owner, relid locked ACCESS EXCLUSIVE.  Returns the archive's OID.
 */
Oid
ac_table_mode_create(Oid relid, const char *arcname, const char *agecol)
{
	Oid			nsp = get_rel_namespace(relid);
	Oid			tablespace = get_rel_tablespace(relid);
	char	   *nspname = get_namespace_name(nsp);
	char	   *qrel = quote_qualified_identifier(nspname, get_rel_name(relid));
	char	   *qarc = quote_qualified_identifier(nspname, arcname);
	Oid			arcid;

	ac_spi_exec(psprintf("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS"
						 " INCLUDING INDEXES INCLUDING STORAGE INCLUDING COMPRESSION"
						 " INCLUDING GENERATED INCLUDING STATISTICS INCLUDING COMMENTS)%s%s",
						 qarc, qrel,
						 OidIsValid(tablespace) ? " TABLESPACE " : "",
						 OidIsValid(tablespace) ? quote_identifier(get_tablespace_name(tablespace)) : ""),
				SPI_OK_UTILITY);
	ac_copy_foreign_keys(relid, qarc);
	ac_spi_exec(psprintf("ALTER TABLE %s INHERIT %s", qarc, qrel), SPI_OK_UTILITY);
	CommandCounterIncrement();
	arcid = get_relname_relid(arcname, nsp);
	ac_create_guard(relid, agecol);
	ac_create_guard(arcid, agecol);
	CommandCounterIncrement();
	return arcid;
}

/*
 * Undo table mode for cfg (its configuration forgotten already): the guard
 * indexes and the inheritance go, the
 * archived rows go back into <t> with one INSERT (table mode refuses
 * row-level triggers of the user, so none fires; statement-level INSERT
 * triggers of <t> fire once), and the archive is dropped.  "published":
 * the rows are deleted from the archive as they are copied, so that logical
 * replication subscribers move them too.  Runs as the table's owner, both
 * tables locked ACCESS EXCLUSIVE.  Returns the number of rows moved back.
 */
uint64
ac_table_mode_remove(AcTableConfig *cfg, bool published)
{
	char	   *qrel = ac_qualified_name(cfg->relation);
	char	   *qarc = ac_qualified_name(cfg->archive);
	Relation	rel = table_open(cfg->relation, NoLock);
	Relation	arc = table_open(cfg->archive, NoLock);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData cols;
	bool		always = false;
	List	   *guards;
	uint64		moved;
	int			i;

	/* columns by name, as inheritance keeps them; generated ones computed again */
	initStringInfo(&cols);
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || att->attgenerated)
			continue;
		if (att->attidentity == ATTRIBUTE_IDENTITY_ALWAYS)
			always = true;
		appendStringInfo(&cols, "%s%s", cols.len > 0 ? ", " : "",
						 quote_identifier(NameStr(att->attname)));
	}
	guards = list_concat(ac_guard_indexes(rel), ac_guard_indexes(arc));
	table_close(arc, NoLock);
	table_close(rel, NoLock);

	ac_drop_guards(guards);
	ac_spi_exec(psprintf("ALTER TABLE %s NO INHERIT %s", qarc, qrel), SPI_OK_UTILITY);
	if (published)
	{
		ac_spi_exec(psprintf("WITH moved AS (DELETE FROM %s RETURNING %s) INSERT INTO %s (%s)%s SELECT * FROM moved",
							 qarc, cols.data, qrel, cols.data, always ? " OVERRIDING SYSTEM VALUE" : ""),
					SPI_OK_INSERT);
		moved = SPI_processed;
		ac_unregister_check_emptied(cfg);
	}
	else
	{
		ac_spi_exec(psprintf("INSERT INTO %s (%s)%s SELECT %s FROM %s",
							 qrel, cols.data, always ? " OVERRIDING SYSTEM VALUE" : "",
							 cols.data, qarc),
					SPI_OK_INSERT);
		moved = SPI_processed;
	}
	ac_spi_exec(psprintf("DROP TABLE %s", qarc), SPI_OK_UTILITY);
	return moved;
}
