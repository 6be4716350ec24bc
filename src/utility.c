/*-------------------------------------------------------------------------
 *
 * utility.c
 *		A ProcessUtility hook for the statements that need a database
 *		without other sessions (DROP DATABASE, ALTER DATABASE ... RENAME TO
 *		or SET TABLESPACE, CREATE DATABASE ... TEMPLATE): it stops the
 *		archive_cluster worker of that database first, so that they do not
 *		fail because of it.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/dbcommands.h"
#include "commands/defrem.h"
#include "nodes/parsenodes.h"
#include "tcop/utility.h"

#include "archive_cluster.h"

static ProcessUtility_hook_type prev_process_utility = NULL;

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

/* The database whose worker must go before this statement runs, or NULL. */
static const char *
ac_database_to_free(Node *stmt)
{
	switch (nodeTag(stmt))
	{
		case T_DropdbStmt:
			return ((DropdbStmt *) stmt)->dbname;
		case T_RenameStmt:
			if (((RenameStmt *) stmt)->renameType == OBJECT_DATABASE)
				return ((RenameStmt *) stmt)->subname;
			return NULL;
		case T_AlterDatabaseStmt:
			if (ac_option_value(((AlterDatabaseStmt *) stmt)->options, "tablespace"))
				return ((AlterDatabaseStmt *) stmt)->dbname;
			return NULL;
		case T_CreatedbStmt:
			return ac_option_value(((CreatedbStmt *) stmt)->options, "template");
		default:
			return NULL;
	}
}

static void
ac_process_utility(PlannedStmt *pstmt, const char *queryString,
				   bool readOnlyTree, ProcessUtilityContext context,
				   ParamListInfo params, QueryEnvironment *queryEnv,
				   DestReceiver *dest, QueryCompletion *qc)
{
	const char *dbname = ac_database_to_free(pstmt->utilityStmt);

	if (dbname != NULL)
	{
		Oid			dboid = get_database_oid(dbname, true);

		if (OidIsValid(dboid))
			ac_stop_database_worker(dboid);
	}

	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context,
							 params, queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
}

void
ac_utility_hook_install(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = ac_process_utility;
}
