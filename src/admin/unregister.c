/*-------------------------------------------------------------------------
 *
 * unregister.c
 *		archive_cluster_unregister(): back to one plain table.  Locks the
 *		view and both tables (ACCESS EXCLUSIVE, with lock_timeout and
 *		retries), copies the archived rows back into the current table (in
 *		table mode: into <t>, after removing the inheritance and the guard
 *		indexes), drops the view and the archive, renames the table back and
 *		forgets its configuration.  The DDL runs as the table's owner.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "catalog/catalog.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/dependency.h"
#include "catalog/pg_am.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/tablespace.h"
#include "executor/spi.h"
#include "fmgr.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "access/stratnum.h"
#include "utils/acl.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "archive_cluster.h"
#include "admin/register_partitioned.h"
#include "registry/replication.h"
#include "table/table_mode.h"
#include "registry/tiers.h"
#include "base/util.h"
#include "registry/config.h"

PG_FUNCTION_INFO_V1(archive_cluster_unregister);

/* Delete the configuration of a registered table being unregistered. */
static void
ac_forget_config(Oid relation)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];

	values[0] = ObjectIdGetDatum(relation);
	ac_exec_as_extension_owner(psprintf("DELETE FROM %s WHERE relation::pg_catalog.oid OPERATOR(pg_catalog.=) $1",
										ac_extension_object("archive_cluster_config")),
							   1, argtypes, values, NULL, SPI_OK_DELETE);
}

Datum
archive_cluster_unregister(PG_FUNCTION_ARGS)
{
	Oid			relid;
	AcTableConfig cfg;
	int			timeout_ms;
	int			retries;
	Relation	cur;
	char	   *relname;
	char	   *qrel;
	char	   *qcur;
	char	   *qarc;
	Relation	view;
	Relation	arc;
	int			natts;
	AttrNumber *curatt;
	AttrNumber *arcatt;
	StringInfoData curcols;
	StringInfoData arccols;
	bool		has_always_identity = false;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	uint64		moved;
	AcUnregisterPub pub;
	int			i;

	ac_require_arg(fcinfo, 0, "relation");
	ac_require_arg(fcinfo, 1, "lock_timeout");
	ac_require_arg(fcinfo, 2, "lock_retries");
	relid = PG_GETARG_OID(0);
	ac_check_relation_exists(relid);
	timeout_ms = ac_interval_ms(PG_GETARG_INTERVAL_P(1), "lock_timeout");
	retries = PG_GETARG_INT32(2);
	if (retries < 0 || retries > 1000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock_retries must be between 0 and 1000")));

	SPI_connect();

	if (ac_unregister_partitioned(relid, timeout_ms))
	{
		SPI_finish();
		PG_RETURN_INT64(0);
	}
	ac_load_config_or_error(relid, &cfg);
	ac_check_owner(relid);
	ac_check_owner(cfg.current);
	ac_check_owner(cfg.archive);

	ac_lock_with_retries(relid, timeout_ms, retries);
	ac_lock_with_retries(cfg.current, timeout_ms, retries);
	ac_lock_with_retries(cfg.archive, timeout_ms, retries);
	/* again under the locks: the owner may have changed while we waited */
	ac_check_owner(relid);
	ac_check_owner(cfg.current);
	ac_check_owner(cfg.archive);
	ac_unregister_check(&cfg, &pub);
	relname = pub.relname;

	if (cfg.table_mode)
	{
		/* first: unregistered, the tiers may lose their guard indexes */
		ac_forget_config(relid);
		ac_switch_to_owner(relid, &save_userid, &save_sec_context, &save_nestlevel);
		ac_no_row_security();
		moved = ac_table_mode_remove(&cfg, pub.move);
		ac_restore_user(save_userid, save_sec_context, save_nestlevel);
		if (pub.pubname != NULL)
			ac_unregister_published(&cfg, &pub);
		SPI_finish();
		PG_RETURN_INT64((int64) moved);
	}

	qrel = ac_qualified_name(relid);
	qcur = ac_qualified_name(cfg.current);
	qarc = ac_qualified_name(cfg.archive);

	/*
	 * Each archived row goes back column by column as the view reads it: by
	 * number (tiers.c), not by name, which a rename of a tier's column could
	 * have crossed.  Generated columns are computed again.
	 */
	view = relation_open(relid, NoLock);
	cur = table_open(cfg.current, NoLock);
	arc = table_open(cfg.archive, NoLock);
	natts = RelationGetDescr(view)->natts;
	curatt = palloc(sizeof(AttrNumber) * natts);
	arcatt = palloc(sizeof(AttrNumber) * natts);
	ac_tier_columns(view, cfg.current, cfg.archive, curatt, arcatt);
	initStringInfo(&curcols);
	initStringInfo(&arccols);
	for (i = 0; i < natts; i++)
	{
		Form_pg_attribute catt = TupleDescAttr(RelationGetDescr(cur), curatt[i] - 1);
		Form_pg_attribute aatt = TupleDescAttr(RelationGetDescr(arc), arcatt[i] - 1);

		if (catt->attgenerated)
			continue;
		if (catt->attidentity == ATTRIBUTE_IDENTITY_ALWAYS)
			has_always_identity = true;
		appendStringInfo(&curcols, "%s%s", curcols.len > 0 ? ", " : "",
						 quote_identifier(NameStr(catt->attname)));
		appendStringInfo(&arccols, "%s%s", arccols.len > 0 ? ", " : "",
						 quote_identifier(NameStr(aatt->attname)));
	}
	/* columns added to both tables after registration, by name */
	for (i = 0; i < RelationGetDescr(cur)->natts; i++)
	{
		Form_pg_attribute catt = TupleDescAttr(RelationGetDescr(cur), i);
		AttrNumber	a;

		if (catt->attisdropped || catt->attgenerated ||
			ac_view_column_of(curatt, natts, i + 1) >= 0)
			continue;
		a = ac_unviewed_counterpart(cur, arc, arcatt, natts, i + 1);
		if (a == InvalidAttrNumber)
			continue;			/* current's alone: its default */
		if (catt->attidentity == ATTRIBUTE_IDENTITY_ALWAYS)
			has_always_identity = true;
		appendStringInfo(&curcols, ", %s", quote_identifier(NameStr(catt->attname)));
		appendStringInfo(&arccols, ", %s",
						 quote_identifier(NameStr(TupleDescAttr(RelationGetDescr(arc), a - 1)->attname)));
	}
	table_close(arc, NoLock);
	table_close(cur, NoLock);
	relation_close(view, NoLock);

	ac_switch_to_owner(cfg.current, &save_userid, &save_sec_context, &save_nestlevel);
	ac_no_row_security();
	/* published: deleted as copied, so that subscribers move them too */
	if (pub.move)
	{
		ac_spi_exec(psprintf("WITH moved AS (DELETE FROM %s RETURNING %s) INSERT INTO %s (%s)%s SELECT * FROM moved",
							 qarc, arccols.data, qcur, curcols.data,
							 has_always_identity ? " OVERRIDING SYSTEM VALUE" : ""),
					SPI_OK_INSERT);
		moved = SPI_processed;
		ac_unregister_check_emptied(&cfg);
	}
	else
	{
		ac_spi_exec(psprintf("INSERT INTO %s (%s)%s SELECT %s FROM %s",
							 qcur, curcols.data,
							 has_always_identity ? " OVERRIDING SYSTEM VALUE" : "",
							 arccols.data, qarc),
					SPI_OK_INSERT);
		moved = SPI_processed;
	}
	ac_spi_exec(psprintf("DROP VIEW %s", qrel), SPI_OK_UTILITY);
	ac_spi_exec(psprintf("DROP TABLE %s", qarc), SPI_OK_UTILITY);
	ac_spi_exec(psprintf("ALTER TABLE %s RENAME TO %s", qcur, quote_identifier(relname)),
				SPI_OK_UTILITY);
	ac_restore_user(save_userid, save_sec_context, save_nestlevel);

	ac_forget_config(relid);
	if (pub.pubname != NULL)
		ac_unregister_published(&cfg, &pub);

	SPI_finish();
	PG_RETURN_INT64((int64) moved);
}
