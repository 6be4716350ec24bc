/*-------------------------------------------------------------------------
 *
 * register.c
 *		archive_cluster_register(): turn a table into the view <t> over
 *		<t>_current (the original table, renamed in place) and <t>_archive
 *		(view mode), or give it the inheritance child <t>_archive (table
 *		mode); a partitioned table goes to register_partitioned.c.  (Back:
 *		unregister.c; the checks of the settings: settings.c.)
 *
 *		Registering copies no rows: it takes one short ACCESS EXCLUSIVE lock
 *		(with lock_timeout and retries), renames the table, creates the empty
 *		archive with the same columns, defaults, constraints and indexes, the
 *		view with the same column order, defaults and grants, and the view's
 *		INSTEAD OF trigger.  The DDL runs as the table's owner.
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
#include "compat.h"
#include "base/guc.h"
#include "registry/constraints.h"
#include "admin/register_partitioned.h"
#include "admin/settings.h"
#include "table/table_mode.h"
#include "base/util.h"
#include "registry/config.h"

PG_FUNCTION_INFO_V1(archive_cluster_register);

/* Run a read-only catalog query whose $1 is an OID; its rows in SPI_tuptable. */
static void
ac_catalog_query(const char *sql, Oid arg, long limit)
{
	Oid			argtypes[1] = {OIDOID};
	Datum		values[1];

	values[0] = ObjectIdGetDatum(arg);
	if (SPI_execute_with_args(sql, 1, argtypes, values, NULL, true, limit) != SPI_OK_SELECT)
		elog(ERROR, "could not run \"%s\"", sql);
}

/* Every requirement on the table itself; rel is locked ACCESS EXCLUSIVE. */
static void
ac_check_table(Relation rel, char **cluster_by, int ncluster, const char *age_column,
			   bool table_mode)
{
	Oid			relid = RelationGetRelid(rel);
	const char *relname = RelationGetRelationName(rel);
	AttrNumber	keys[INDEX_MAX_KEYS];
	Oid			eqops[INDEX_MAX_KEYS];

	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot register partitioned table \"%s\"", relname),
				 errhint("Register it with mode => 'partitioned' to cluster its partitions in place.")));
	if (rel->rd_rel->relkind != RELKIND_RELATION)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", relname),
				 errhint("Only plain tables can be registered.")));
	if (rel->rd_rel->relispartition)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot register partition \"%s\"", relname),
				 errhint("Register its partitioned table with mode => 'partitioned'.")));
	if (IsSystemRelation(rel))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot register system table \"%s\"", relname)));
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot register temporary table \"%s\"", relname),
				 errhint("Only permanent tables can be registered.")));
	if (rel->rd_rel->relpersistence == RELPERSISTENCE_UNLOGGED)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot register unlogged table \"%s\"", relname),
				 errhint("Make it permanent first with ALTER TABLE ... SET LOGGED.")));
	if (OidIsValid(rel->rd_rel->reloftype))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot register typed table \"%s\"", relname)));
	if (has_superclass(relid) || has_subclass(relid))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot register table \"%s\" because it takes part in inheritance",
						relname),
				 errhint("Only tables without parents or children can be registered.")));
	if (rel->rd_rel->relhasrules)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot register table \"%s\" because it has rules", relname),
				 errhint("Drop the rules first.")));
	if (rel->rd_rel->relrowsecurity)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot register table \"%s\" because row-level security is enabled",
						relname)));

	ac_check_cluster_columns(rel, cluster_by, ncluster);

	ac_check_age_column(rel, age_column);

	ac_check_referencing_keys(rel, relname, true);
	if (table_mode)
	{
		/* <t> stays a table: views on it, any unique index are fine */
		ac_table_mode_check(rel, NULL, age_column, true);
		return;
	}

	if (ac_identity_key(rel, keys, eqops) == 0)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("table \"%s\" has no primary key or NOT NULL unique index", relname),
				 errhint("UPDATE and DELETE through the view find rows by such a key; add a primary key.")));

	ac_check_unique_indexes(rel, relname, true);

	ac_catalog_query("SELECT CASE WHEN d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass"
					 " THEN 'view ' OPERATOR(pg_catalog.||) r.ev_class::pg_catalog.regclass::pg_catalog.text"
					 " ELSE pg_catalog.pg_describe_object(d.classid, d.objid, d.objsubid) END"
					 " FROM pg_catalog.pg_depend d"
					 " LEFT JOIN pg_catalog.pg_rewrite r ON d.classid OPERATOR(pg_catalog.=) 'pg_catalog.pg_rewrite'::pg_catalog.regclass"
					 "  AND r.oid OPERATOR(pg_catalog.=) d.objid"
					 " WHERE d.refclassid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass"
					 " AND d.refobjid OPERATOR(pg_catalog.=) $1"
					 " AND d.classid OPERATOR(pg_catalog.=) ANY (ARRAY['pg_catalog.pg_rewrite'::pg_catalog.regclass,"
					 "  'pg_catalog.pg_proc'::pg_catalog.regclass]::pg_catalog.oid[])"
					 " AND r.ev_class IS DISTINCT FROM $1"
					 " ORDER BY 1 LIMIT 1", relid, 1);
	if (SPI_processed > 0)
		ereport(ERROR,
				(errcode(ERRCODE_DEPENDENT_OBJECTS_STILL_EXIST),
				 errmsg("cannot register table \"%s\" because other objects depend on it",
						relname),
				 errdetail("%s depends on table %s.",
						   SPI_getvalue(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1),
						   relname),
				 errhint("Drop the dependent objects, register the table, then create them again on the view.")));
}

/* Error out if relid is a registered view or one of its tables. */
static void
ac_check_not_registered(Oid relid)
{
	Oid			viewid = ac_registered_view_of(relid);

	if (OidIsValid(viewid))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_OBJECT),
				 errmsg("relation \"%s\" is already registered with archive_cluster",
						get_rel_name(relid)),
				 viewid != relid ?
				 errdetail("It belongs to the registered table \"%s\".", get_rel_name(viewid)) : 0));
}

/* name || suffix, checked for length and for collisions in namespace nsp */
static char *
ac_derived_name(const char *relname, const char *suffix, Oid nsp)
{
	char	   *name = psprintf("%s%s", relname, suffix);

	if (strlen(name) > NAMEDATALEN - 1)
		ereport(ERROR,
				(errcode(ERRCODE_NAME_TOO_LONG),
				 errmsg("name \"%s\" would be longer than %d bytes", name, NAMEDATALEN - 1),
				 errhint("Rename the table to a shorter name before registering it.")));
	if (OidIsValid(get_relname_relid(name, nsp)) ||
		SearchSysCacheExists2(TYPENAMENSP, CStringGetDatum(name), ObjectIdGetDatum(nsp)))
		ereport(ERROR,
				(errcode(ERRCODE_DUPLICATE_TABLE),
				 errmsg("relation \"%s\" already exists", name),
				 errhint("archive_cluster needs the name for the table's %s part; rename or drop the existing object.",
						 suffix + 1)));
	return name;
}

/* Comma-separated quoted names of the non-dropped columns of rel. */
static char *
ac_column_list(Relation rel, bool skip_generated)
{
	TupleDesc	desc = RelationGetDescr(rel);
	StringInfoData buf;
	int			i;

	initStringInfo(&buf);
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);

		if (att->attisdropped || (skip_generated && att->attgenerated))
			continue;
		if (buf.len > 0)
			appendStringInfoString(&buf, ", ");
		appendStringInfoString(&buf, quote_identifier(NameStr(att->attname)));
	}
	return buf.data;
}

/*
 * Put the ACL "acl" (NULL: the default) on relation "to", attribute attnum
 * (0: the relation itself), and record the roles it names in pg_shdepend,
 * as GRANT does.  The items keep their grantors, so grant chains (and
 * REVOKE ... CASCADE) work on "to" as they do on the original.
 */
static void
ac_set_acl(Oid to, AttrNumber attnum, Datum acl, bool aclnull)
{
	Oid			catalog = attnum == 0 ? RelationRelationId : AttributeRelationId;
	int			aclcol = attnum == 0 ? Anum_pg_class_relacl : Anum_pg_attribute_attacl;
	Relation	cat = table_open(catalog, RowExclusiveLock);
	TupleDesc	catdesc = RelationGetDescr(cat);
	HeapTuple	tup;
	HeapTuple	newtup;
	Datum		old;
	bool		oldnull;
	Datum	   *values = palloc0(sizeof(Datum) * catdesc->natts);
	bool	   *nulls = palloc0(sizeof(bool) * catdesc->natts);
	bool	   *replace = palloc0(sizeof(bool) * catdesc->natts);
	Oid		   *oldmembers = NULL;
	Oid		   *newmembers = NULL;
	int			noldmembers = 0;
	int			nnewmembers = 0;

	if (attnum == 0)
		tup = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(to));
	else
		tup = SearchSysCacheCopy2(ATTNUM, ObjectIdGetDatum(to), Int16GetDatum(attnum));
	if (!HeapTupleIsValid(tup) && attnum == 0)
		elog(ERROR, "cache lookup failed for relation %u", to);
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for attribute %d of relation %u", attnum, to);

	old = heap_getattr(tup, aclcol, catdesc, &oldnull);
	if (!oldnull)
		noldmembers = aclmembers(DatumGetAclP(old), &oldmembers);
	if (!aclnull)
		nnewmembers = aclmembers(DatumGetAclP(acl), &newmembers);

	values[aclcol - 1] = acl;
	nulls[aclcol - 1] = aclnull;
	replace[aclcol - 1] = true;
	newtup = heap_modify_tuple(tup, catdesc, values, nulls, replace);
	CatalogTupleUpdate(cat, &newtup->t_self, newtup);
	updateAclDependencies(RelationRelationId, to, attnum, ac_relation_owner(to),
						  noldmembers, oldmembers, nnewmembers, newmembers);
	table_close(cat, RowExclusiveLock);
}

/*
 * Give relation "to" exactly the table- and column-level privileges of
 * "from", grantors included (columns matched by name; both have the same
 * owner).  Copied from the catalogs: no statement text is built.
 */
static void
ac_copy_grants(Oid from, Oid to)
{
	HeapTuple	tup;
	Datum		acl;
	bool		isnull;
	Relation	rel;
	TupleDesc	desc;
	int			i;

	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(from));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", from);
	acl = SysCacheGetAttr(RELOID, tup, Anum_pg_class_relacl, &isnull);
	ac_set_acl(to, 0, acl, isnull);
	ReleaseSysCache(tup);

	/*
	 * A copy of the column list: ac_set_acl changes the catalogs, and the
	 * invalidations it processes may rebuild the relcache entry of "from",
	 * freeing the descriptor a loop over RelationGetDescr() would be reading.
	 */
	rel = table_open(from, NoLock);
	desc = CreateTupleDescCopy(RelationGetDescr(rel));
	table_close(rel, NoLock);
	for (i = 0; i < desc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(desc, i);
		AttrNumber	toattnum;

		if (att->attisdropped)
			continue;
		tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(from), Int16GetDatum(att->attnum));
		if (!HeapTupleIsValid(tup))
			elog(ERROR, "cache lookup failed for attribute %d of relation %u",
				 att->attnum, from);
		acl = SysCacheGetAttr(ATTNUM, tup, Anum_pg_attribute_attacl, &isnull);
		toattnum = get_attnum(to, NameStr(att->attname));
		if (!isnull && toattnum > 0)
			ac_set_acl(to, toattnum, acl, false);
		ReleaseSysCache(tup);
	}
	FreeTupleDesc(desc);
	CommandCounterIncrement();
}

/*
 * Defaults of the view's columns, so that INSERT through the view fills
 * omitted columns as the table would; an identity column gets
 * archive_cluster_identity_nextval() (see triggers.c).
 */
static void
ac_copy_defaults(Oid relid, Oid viewid, const char *qrel)
{
	char	   *nextval = ac_extension_object("archive_cluster_identity_nextval");
	List	   *stmts = NIL;
	ListCell   *lc;
	uint64		i;

	ac_catalog_query("SELECT a.attname, a.attidentity OPERATOR(pg_catalog.<>) '',"
					 " pg_catalog.pg_get_expr(d.adbin, d.adrelid)"
					 " FROM pg_catalog.pg_attribute a"
					 " LEFT JOIN pg_catalog.pg_attrdef d ON d.adrelid OPERATOR(pg_catalog.=) a.attrelid"
					 "  AND d.adnum OPERATOR(pg_catalog.=) a.attnum"
					 " WHERE a.attrelid OPERATOR(pg_catalog.=) $1 AND a.attnum OPERATOR(pg_catalog.>) 0"
					 " AND NOT a.attisdropped AND a.attgenerated OPERATOR(pg_catalog.=) ''"
					 " AND (a.attidentity OPERATOR(pg_catalog.<>) '' OR d.adbin IS NOT NULL)"
					 " ORDER BY a.attnum", relid, 0);
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	row = SPI_tuptable->vals[i];
		TupleDesc	rowdesc = SPI_tuptable->tupdesc;
		char	   *attname = SPI_getvalue(row, rowdesc, 1);
		bool		isnull;
		char	   *expr;

		if (DatumGetBool(SPI_getbinval(row, rowdesc, 2, &isnull)))
			expr = psprintf("%s(%s::pg_catalog.regclass, %s::pg_catalog.name)",
							nextval,
							quote_literal_cstr(psprintf("%u", viewid)),
							quote_literal_cstr(attname));
		else
			expr = SPI_getvalue(row, rowdesc, 3);	/* deparsed by PostgreSQL */
		stmts = lappend(stmts, psprintf("ALTER VIEW %s ALTER COLUMN %s SET DEFAULT %s",
										qrel, quote_identifier(attname), expr));
	}
	foreach(lc, stmts)
		ac_spi_exec((char *) lfirst(lc), SPI_OK_UTILITY);
}

/* Record a registration, with the role that called archive_cluster_register(). */
static void
ac_record_config(Oid relation, Oid current, Oid archive, ArrayType *cluster_by,
				 const char *age_column, Interval *hot_window, int64 batch_rows,
				 Oid caller_id, const char *mode)
{
	Oid			argtypes[9] = {REGCLASSOID, REGCLASSOID, REGCLASSOID, NAMEARRAYOID,
	NAMEOID, INTERVALOID, INT8OID, NAMEOID, TEXTOID};
	Datum		values[9];
	char		nulls[9] = "         ";
	NameData	age;
	NameData	caller;

	values[0] = ObjectIdGetDatum(relation);
	values[1] = ObjectIdGetDatum(current);
	values[2] = ObjectIdGetDatum(archive);
	values[3] = PointerGetDatum(cluster_by);
	namestrcpy(&age, age_column);
	values[4] = NameGetDatum(&age);
	values[5] = IntervalPGetDatum(hot_window);
	values[6] = Int64GetDatum(batch_rows);
	if (batch_rows == 0)
		nulls[6] = 'n';
	namestrcpy(&caller, GetUserNameFromId(caller_id, false));
	values[7] = NameGetDatum(&caller);
	values[8] = CStringGetTextDatum(mode);
	ac_exec_as_extension_owner(psprintf("INSERT INTO %s (relation, current_table, archive_table,"
										" cluster_by, age_column, hot_window, batch_rows, registered_by, mode)"
										" VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)",
										ac_extension_object("archive_cluster_config")),
							   9, argtypes, values, nulls, SPI_OK_INSERT);
}

Datum
archive_cluster_register(PG_FUNCTION_ARGS)
{
	Oid			relid;
	ArrayType  *arr;
	int			ncluster;
	char	   *cluster_by[AC_MAX_CLUSTER_COLS];
	char	   *age_column;
	Interval   *hot_window;
	int64		batch_rows = 0;
	int			timeout_ms;
	int			retries;
	Relation	rel;
	Oid			nsp;
	char	   *relname;
	char	   *nspname;
	char	   *curname;
	char	   *arcname;
	char	   *qrel;
	char	   *qcur;
	char	   *qarc;
	char	   *cols;
	char	   *sql;
	Oid			tablespace;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;
	Oid			viewid;
	Oid			arcid;
	bool		table_mode = false;
	bool		partitioned = false;

	ac_require_arg(fcinfo, 0, "relation");
	ac_require_arg(fcinfo, 1, "cluster_by");
	ac_require_arg(fcinfo, 2, "age_column");
	ac_require_arg(fcinfo, 3, "hot_window");
	ac_require_arg(fcinfo, 5, "lock_timeout");
	ac_require_arg(fcinfo, 6, "lock_retries");
	ac_require_arg(fcinfo, 7, "mode");

	relid = PG_GETARG_OID(0);
	ac_check_relation_exists(relid);

	{
		char	   *mode = text_to_cstring(PG_GETARG_TEXT_PP(7));

		if (strcmp(mode, "table") == 0)
			table_mode = true;
		else if (strcmp(mode, "partitioned") == 0)
			partitioned = true;
		else if (strcmp(mode, "view") != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("invalid mode \"%s\"", mode),
					 errhint("mode is 'view' (the table becomes a view over two tables), 'table' (it stays a table, the archive its inheritance child) or 'partitioned' (a partitioned table, each partition clustered in place).")));
	}

	arr = PG_GETARG_ARRAYTYPE_P(1);
	ncluster = ac_parse_cluster_by(arr, cluster_by);
	age_column = pstrdup(NameStr(*PG_GETARG_NAME(2)));

	hot_window = PG_GETARG_INTERVAL_P(3);
	ac_check_hot_window(hot_window);

	if (!PG_ARGISNULL(4))
	{
		batch_rows = PG_GETARG_INT64(4);
		ac_check_batch_rows(batch_rows, "Pass NULL to size batches from the table's statistics.");
	}
	timeout_ms = ac_interval_ms(PG_GETARG_INTERVAL_P(5), "lock_timeout");
	retries = PG_GETARG_INT32(6);
	if (retries < 0 || retries > 1000)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("lock_retries must be between 0 and 1000")));

	SPI_connect();

	if (!SearchSysCacheExists1(RELOID, ObjectIdGetDatum(relid)))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", relid)));
	ac_check_not_registered(relid);
	ac_check_owner(relid);

	if (partitioned)
	{
		if (batch_rows != 0)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("batch_rows does not apply to a partitioned table"),
					 errhint("Each partition is clustered in place, page by page; pass NULL.")));
		ac_register_partitioned(relid, arr, cluster_by, ncluster, age_column, hot_window,
								timeout_ms);
		SPI_finish();
		PG_RETURN_VOID();
	}

	ac_lock_with_retries(relid, timeout_ms, retries);

	/*
	 * Again under the lock: a registration of this table that committed
	 * while we waited has made it <t>_current of a registered view, and an
	 * ALTER TABLE ... OWNER TO may have given it to another role.
	 */
	ac_check_not_registered(relid);
	ac_check_owner(relid);

	rel = table_open(relid, NoLock);
	ac_check_table(rel, cluster_by, ncluster, age_column, table_mode);
	relname = pstrdup(RelationGetRelationName(rel));
	nsp = RelationGetNamespace(rel);
	nspname = get_namespace_name(nsp);
	tablespace = rel->rd_rel->reltablespace;
	curname = table_mode ? NULL : ac_derived_name(relname, "_current", nsp);
	arcname = ac_derived_name(relname, "_archive", nsp);
	cols = ac_column_list(rel, false);

	if (table_mode)
	{
		table_close(rel, NoLock);	/* CREATE INDEX needs it closed */
		ac_switch_to_owner(relid, &save_userid, &save_sec_context, &save_nestlevel);
		arcid = ac_table_mode_create(relid, arcname, age_column);
		ac_restore_user(save_userid, save_sec_context, save_nestlevel);
		ac_record_config(relid, relid, arcid, arr, age_column, hot_window, batch_rows,
						 save_userid, "table");
		SPI_finish();
		PG_RETURN_VOID();
	}
	table_close(rel, NoLock);

	qrel = quote_qualified_identifier(nspname, relname);
	qcur = quote_qualified_identifier(nspname, curname);
	qarc = quote_qualified_identifier(nspname, arcname);

	ac_switch_to_owner(relid, &save_userid, &save_sec_context, &save_nestlevel);

	ac_spi_exec(psprintf("ALTER TABLE %s RENAME TO %s", qrel, quote_identifier(curname)),
				SPI_OK_UTILITY);
	sql = psprintf("CREATE TABLE %s (LIKE %s INCLUDING DEFAULTS INCLUDING CONSTRAINTS"
				   " INCLUDING INDEXES INCLUDING STORAGE INCLUDING COMPRESSION"
				   " INCLUDING GENERATED INCLUDING STATISTICS INCLUDING COMMENTS)%s%s",
				   qarc, qcur,
				   OidIsValid(tablespace) ? " TABLESPACE " : "",
				   OidIsValid(tablespace) ? quote_identifier(get_tablespace_name(tablespace)) : "");
	ac_spi_exec(sql, SPI_OK_UTILITY);

	ac_copy_foreign_keys(relid, qarc);

	ac_spi_exec(psprintf("CREATE VIEW %s AS SELECT %s FROM %s UNION ALL SELECT %s FROM %s",
						 qrel, cols, qcur, cols, qarc),
				SPI_OK_UTILITY);
	CommandCounterIncrement();
	viewid = get_relname_relid(relname, nsp);
	arcid = get_relname_relid(arcname, nsp);
	ac_copy_defaults(relid, viewid, qrel);
	ac_copy_grants(relid, viewid);
	ac_copy_grants(relid, arcid);

	ac_spi_exec(psprintf("CREATE TRIGGER archive_cluster_dml INSTEAD OF INSERT OR UPDATE OR DELETE"
						 " ON %s FOR EACH ROW EXECUTE FUNCTION %s()",
						 qrel, ac_extension_object("archive_cluster_view_trigger")),
				SPI_OK_UTILITY);
	ac_spi_exec(psprintf("CREATE TRIGGER archive_cluster_flush AFTER INSERT"
						 " ON %s FOR EACH STATEMENT EXECUTE FUNCTION %s()",
						 qrel, ac_extension_object("archive_cluster_view_flush")),
				SPI_OK_UTILITY);

	ac_restore_user(save_userid, save_sec_context, save_nestlevel);

	ac_record_config(viewid, relid, arcid, arr, age_column, hot_window, batch_rows,
					 save_userid, "view");
	SPI_finish();
	PG_RETURN_VOID();
}
