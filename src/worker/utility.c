/*-------------------------------------------------------------------------
 *
 * utility.c
 *		A ProcessUtility hook for the statements that need a database
 *		without other sessions (DROP DATABASE, ALTER DATABASE ... RENAME TO
 *		or SET TABLESPACE, CREATE DATABASE ... TEMPLATE): it stops the
 *		archive_cluster worker of that database first, so that they do not
 *		fail because of it.
 *
 *		Only when the statement's own privilege checks will pass: a role
 *		that may not drop, rename or copy a database cannot stop its worker
 *		by trying (the statement then fails as usual, the worker stays).
 *
 *		It also tells the launcher when CREATE EXTENSION archive_cluster
 *		commits, so that the new database is served without waiting for
 *		archive_cluster.extension_recheck_interval.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/xact.h"
#include "catalog/pg_database.h"
#include "commands/dbcommands.h"
#include "commands/extension.h"
#include "commands/defrem.h"
#include "nodes/parsenodes.h"
#include "miscadmin.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/syscache.h"

#include "base/guc.h"
#include "worker/utility.h"
#include "compat.h"
#include "worker/pool.h"

static ProcessUtility_hook_type prev_process_utility = NULL;

/* CREATE EXTENSION archive_cluster ran in this transaction */
static bool ac_extension_created = false;

static void
ac_utility_xact_callback(XactEvent event, void *arg)
{
	if (!ac_extension_created)
		return;
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT)
		ac_pool_extension_created(MyDatabaseId);
	if (event == XACT_EVENT_COMMIT || event == XACT_EVENT_PARALLEL_COMMIT ||
		event == XACT_EVENT_ABORT || event == XACT_EVENT_PARALLEL_ABORT ||
		event == XACT_EVENT_PREPARE)
		ac_extension_created = false;
}

/* The value of an option of a CREATE/ALTER DATABASE, if given. */
static const char *
ac_option_value(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = lfirst(lc);

		if (strcmp(def->defname, name) == 0 && def->arg != NULL)
			return defGetString(def);
	}
	return NULL;
}

/* Is the database a template that any role with CREATEDB may copy? */
static bool
ac_database_is_template(Oid dboid)
{
	HeapTuple	tup = SearchSysCache1(DATABASEOID, ObjectIdGetDatum(dboid));
	bool		result = false;

	if (HeapTupleIsValid(tup))
	{
		result = ((Form_pg_database) GETSTRUCT(tup))->datistemplate;
		ReleaseSysCache(tup);
	}
	return result;
}

/*
 * The database whose worker must go before this statement runs, or
 * InvalidOid: none, or the statement will fail its own checks anyway: the
 * caller lacks the privileges (ownership; CREATEDB to rename or copy; a
 * copied database must be a template or the caller's), or the database is
 * the current one, a template to drop, a new name taken, a DROP inside a
 * transaction block.
 */
static Oid
ac_database_to_free(Node *stmt, bool toplevel)
{
	Oid			dboid;

	switch (nodeTag(stmt))
	{
		case T_DropdbStmt:
			dboid = get_database_oid(((DropdbStmt *) stmt)->dbname, true);
			if (!toplevel || IsTransactionBlock() || ac_database_is_template(dboid))
				return InvalidOid;
			break;
		case T_RenameStmt:
			if (((RenameStmt *) stmt)->renameType != OBJECT_DATABASE ||
				!have_createdb_privilege() ||
				OidIsValid(get_database_oid(((RenameStmt *) stmt)->newname, true)))
				return InvalidOid;
			dboid = get_database_oid(((RenameStmt *) stmt)->subname, true);
			break;
		case T_AlterDatabaseStmt:
			if (!ac_option_value(((AlterDatabaseStmt *) stmt)->options, "tablespace"))
				return InvalidOid;
			dboid = get_database_oid(((AlterDatabaseStmt *) stmt)->dbname, true);
			break;
		case T_CreatedbStmt:
			{
				const char *template = ac_option_value(((CreatedbStmt *) stmt)->options,
													   "template");

				if (template == NULL || !have_createdb_privilege() ||
					OidIsValid(get_database_oid(((CreatedbStmt *) stmt)->dbname, true)))
					return InvalidOid;
				dboid = get_database_oid(template, true);
				if (OidIsValid(dboid) && ac_database_is_template(dboid))
					return dboid;
				break;
			}
		default:
			return InvalidOid;
	}
	if (!OidIsValid(dboid) || dboid == MyDatabaseId ||
		!ac_database_ownercheck(dboid, GetUserId()))
		return InvalidOid;
	return dboid;
}

static void
ac_process_utility(PlannedStmt *pstmt, const char *queryString,
				   bool readOnlyTree, ProcessUtilityContext context,
				   ParamListInfo params, QueryEnvironment *queryEnv,
				   DestReceiver *dest, QueryCompletion *qc)
{
	Oid			dboid = ac_database_to_free(pstmt->utilityStmt,
											context == PROCESS_UTILITY_TOPLEVEL);
	/* a CREATE EXTENSION that creates it (not one that finds it there) */
	bool		creating = IsA(pstmt->utilityStmt, CreateExtensionStmt) &&
		strcmp(((CreateExtensionStmt *) pstmt->utilityStmt)->extname, "archive_cluster") == 0 &&
		!OidIsValid(get_extension_oid("archive_cluster", true));

	if (OidIsValid(dboid))
		ac_pool_stop_database_worker(dboid);

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context,
							 params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);

	if (creating)
		ac_extension_created = true;
}

void
ac_utility_hook_install(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = ac_process_utility;
	RegisterXactCallback(ac_utility_xact_callback, NULL);
}
