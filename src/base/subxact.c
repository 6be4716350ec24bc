/*-------------------------------------------------------------------------
 *
 * subxact.c
 *		One unit of work of a call that serves several tables (a run of
 *		every registered table, a leaf of a partitioned table, a lock taken
 *		with a timeout) in a subtransaction of its own: its error rolls back
 *		that unit only, and the caller reports it and goes on with the
 *		next.  A query cancel is never caught: it ends the statement, as it
 *		ends any.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "utils/elog.h"
#include "utils/memutils.h"
#include "utils/resowner.h"

#include "subxact.h"

/*
 * Call fn(arg) in a subtransaction, in memory context workcxt (the caller's
 * when NULL).  NULL when it went through: the subtransaction is committed and
 * its locks belong to the caller's transaction.  Otherwise the
 * subtransaction is rolled back and its error is returned, copied into the
 * caller's memory context with its SQLSTATE, detail and hint (the caller
 * re-throws it with ReThrowError or reports it, then FreeErrorData).
 */
ErrorData *
ac_subxact_call(AcSubxactFn fn, void *arg, MemoryContext workcxt)
{
	MemoryContext oldcxt = CurrentMemoryContext;
	ResourceOwner oldowner = CurrentResourceOwner;
	ErrorData  *volatile edata = NULL;

	BeginInternalSubTransaction(NULL);
	MemoryContextSwitchTo(workcxt != NULL ? workcxt : oldcxt);
	PG_TRY();
	{
		fn(arg);
		ReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_CATCH();
	{
		MemoryContextSwitchTo(oldcxt);
		edata = CopyErrorData();
		FlushErrorState();
		RollbackAndReleaseCurrentSubTransaction();
		MemoryContextSwitchTo(oldcxt);
		CurrentResourceOwner = oldowner;
	}
	PG_END_TRY();
	if (edata != NULL && edata->sqlerrcode == ERRCODE_QUERY_CANCELED)
		ReThrowError(edata);
	return edata;
}
