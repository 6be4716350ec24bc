/*-------------------------------------------------------------------------
 *
 * table_mode.c
 *		Registering a table in table mode, and unregistering it: <t> stays
 *		the table it is (same OID, name, indexes, grants, triggers) and its
 *		own rows are the current tier (ONLY <t>); <t>_archive is created as
 *		its inheritance child, so that every statement on <t> sees both
 *		tiers, and row locks, ON CONFLICT, MERGE and concurrent updates work
 *		as on any table.  Called by register.c, which checks the arguments
 *		and the table, takes the lock and records the configuration.
 *
 *		The archive has the columns of <t> (inheritance), its defaults,
 *		CHECK and NOT NULL constraints, indexes and outgoing foreign keys,
 *		and no privileges: statements on <t> reach its rows with <t>'s.
 *		Both tiers get the trigger that keeps <t>'s unique indexes unique
 *		across them (tier_unique.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/table.h"
#include "catalog/pg_trigger.h"
#include "commands/tablespace.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "archive_cluster.h"
#include "constraints.h"
#include "table_mode.h"
#include "tier_indexes.h"

#define AC_UNIQUE_TRIGGER "archive_cluster_unique"
#define AC_UNIQUE_UPDATE_TRIGGER "archive_cluster_unique_update"

/* Is trigger trig of a tier one of the cross-tier triggers? */
static bool
ac_is_unique_trigger(Trigger *trig)
{
	return strcmp(trig->tgname, AC_UNIQUE_TRIGGER) == 0 ||
		strcmp(trig->tgname, AC_UNIQUE_UPDATE_TRIGGER) == 0;
}

/*
 * Error out unless tier rel has the cross-tier trigger name for event
 * (TRIGGER_TYPE_INSERT or _UPDATE), enabled (ALTER TABLE ... DISABLE
 * TRIGGER USER disables it too).
 */
static void
ac_check_unique_trigger(Relation rel, const char *name, int16 event)
{
	TriggerDesc *trigdesc = rel->trigdesc;
	int			i;

	for (i = 0; trigdesc != NULL && i < trigdesc->numtriggers; i++)
	{
		Trigger    *trig = &trigdesc->triggers[i];

		if (strcmp(trig->tgname, name) == 0 &&
			TRIGGER_FOR_ROW(trig->tgtype) && TRIGGER_FOR_AFTER(trig->tgtype) &&
			(trig->tgtype & event) != 0 && trig->tgenabled != TRIGGER_DISABLED)
			return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
			 errmsg("trigger \"%s\" of \"%s\" is missing or disabled",
					name, RelationGetRelationName(rel)),
			 errdetail("It keeps the unique indexes of a table registered in table mode unique across the table and its archive."),
			 errhint("Enable it with ALTER TABLE ... ENABLE TRIGGER %s, and look for duplicates written while it was not.",
					 name)));
}

/*
 * What table mode refuses beyond view mode's common requirements: indexes
 * the tiers cannot keep together (tier_indexes.c), and row-level triggers
 * of the user: they would not fire for archived rows, which statements on
 * <t> change in <t>_archive.  Also checked before each run.
 */
void
ac_table_mode_check(Relation rel, Relation archive, bool registering)
{
	TriggerDesc *trigdesc = rel->trigdesc;
	int			i;

	ac_check_tier_indexes(rel, archive, registering);
	if (!registering)
	{
		ac_check_unique_trigger(rel, AC_UNIQUE_TRIGGER, TRIGGER_TYPE_INSERT);
		ac_check_unique_trigger(rel, AC_UNIQUE_UPDATE_TRIGGER, TRIGGER_TYPE_UPDATE);
		ac_check_unique_trigger(archive, AC_UNIQUE_TRIGGER, TRIGGER_TYPE_INSERT);
		ac_check_unique_trigger(archive, AC_UNIQUE_UPDATE_TRIGGER, TRIGGER_TYPE_UPDATE);
	}
	for (i = 0; trigdesc != NULL && i < trigdesc->numtriggers; i++)
	{
		Trigger    *trig = &trigdesc->triggers[i];

		if (trig->tgisinternal || !TRIGGER_FOR_ROW(trig->tgtype) ||
			ac_is_unique_trigger(trig))
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
 * The cross-tier triggers on relation qrel: the check is their WHEN
 * condition, made as each row is written (tier_unique.c).
 */
static void
ac_create_unique_triggers(const char *qrel)
{
	const char *checkrow = ac_extension_object("archive_cluster_unique_check_row");
	const char *function = ac_extension_object("archive_cluster_unique_check");

	ac_spi_exec(psprintf("CREATE OR REPLACE TRIGGER " AC_UNIQUE_TRIGGER
						 " AFTER INSERT ON %s FOR EACH ROW WHEN (%s(NEW)) EXECUTE FUNCTION %s()",
						 qrel, checkrow, function),
				SPI_OK_UTILITY);
	ac_spi_exec(psprintf("CREATE OR REPLACE TRIGGER " AC_UNIQUE_UPDATE_TRIGGER
						 " AFTER UPDATE ON %s FOR EACH ROW WHEN (%s(OLD, NEW)) EXECUTE FUNCTION %s()",
						 qrel, checkrow, function),
				SPI_OK_UTILITY);
}

static void
ac_drop_unique_triggers(const char *qrel)
{
	ac_spi_exec(psprintf("DROP TRIGGER IF EXISTS " AC_UNIQUE_TRIGGER " ON %s", qrel),
				SPI_OK_UTILITY);
	ac_spi_exec(psprintf("DROP TRIGGER IF EXISTS " AC_UNIQUE_UPDATE_TRIGGER " ON %s", qrel),
				SPI_OK_UTILITY);
}

/*
 * Create <t>_archive (qualified name qarc) for table rel as its
 * inheritance child, and the triggers.  Runs as the table's owner, rel
 * locked ACCESS EXCLUSIVE.  Returns the archive's OID.
 */
Oid
ac_table_mode_create(Relation rel, const char *arcname)
{
	Oid			nsp = RelationGetNamespace(rel);
	Oid			tablespace = rel->rd_rel->reltablespace;
	char	   *nspname = get_namespace_name(nsp);
	char	   *qrel = quote_qualified_identifier(nspname, RelationGetRelationName(rel));
	char	   *qarc = quote_qualified_identifier(nspname, arcname);

	ac_spi_exec(psprintf("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS"
						 " INCLUDING INDEXES INCLUDING STORAGE INCLUDING COMPRESSION"
						 " INCLUDING GENERATED INCLUDING STATISTICS INCLUDING COMMENTS)%s%s",
						 qarc, qrel,
						 OidIsValid(tablespace) ? " TABLESPACE " : "",
						 OidIsValid(tablespace) ? quote_identifier(get_tablespace_name(tablespace)) : ""),
				SPI_OK_UTILITY);
	ac_copy_foreign_keys(RelationGetRelid(rel), qarc);
	ac_spi_exec(psprintf("ALTER TABLE %s INHERIT %s", qarc, qrel), SPI_OK_UTILITY);
	ac_create_unique_triggers(qrel);
	ac_create_unique_triggers(qarc);
	CommandCounterIncrement();
	return get_relname_relid(arcname, nsp);
}

/*
 * Undo table mode for cfg: the triggers and the inheritance go, the
 * archived rows go back into <t> with one INSERT (table mode refuses
 * row-level triggers of the user, so none fires; statement-level INSERT
 * triggers of <t> fire once), and the archive is dropped.  Runs as the
 * table's owner, both tables locked ACCESS EXCLUSIVE.  Returns the number
 * of rows moved back.
 */
uint64
ac_table_mode_remove(AcTableConfig *cfg)
{
	char	   *qrel = ac_qualified_name(cfg->relation);
	char	   *qarc = ac_qualified_name(cfg->archive);
	Relation	rel = table_open(cfg->relation, NoLock);
	Relation	arc = table_open(cfg->archive, NoLock);
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData cols;
	bool		always = false;
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
	table_close(arc, NoLock);
	table_close(rel, NoLock);

	ac_drop_unique_triggers(qrel);
	ac_drop_unique_triggers(qarc);
	ac_spi_exec(psprintf("ALTER TABLE %s NO INHERIT %s", qarc, qrel), SPI_OK_UTILITY);
	ac_spi_exec(psprintf("INSERT INTO %s (%s)%s SELECT %s FROM %s",
						 qrel, cols.data, always ? " OVERRIDING SYSTEM VALUE" : "",
						 cols.data, qarc),
				SPI_OK_INSERT);
	moved = SPI_processed;
	ac_spi_exec(psprintf("DROP TABLE %s", qarc), SPI_OK_UTILITY);
	return moved;
}
