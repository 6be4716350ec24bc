/*-------------------------------------------------------------------------
 *
 * lock_waiters.c
 *		Is another session waiting for a lock on a relation of this
 *		database, or for this transaction to end (for a row it deleted): a
 *		pass over a leaf partition gives way to it between pages
 *		(partition/leaf_pass.c), so that a DROP or DETACH of the leaf, and
 *		the queries queued behind it, or an UPDATE of a row the pass moved,
 *		wait for one page and a commit.
 *
 *		LockHasWaitersRelation() answers only for a lock held in the main
 *		lock table, and the pass's ROW EXCLUSIVE is usually a fast-path lock
 *		(it fails on those).  So this looks through the processes for one
 *		whose lock wait is on the relation's lock tag, under the lock table
 *		partition that holds that tag: a process waits on a lock of that
 *		partition only while holding it, so the answer is exact for them.
 *		A session that requests a lock conflicting with a fast-path lock
 *		first moves those into the main lock table, then waits there.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xact.h"
#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/proc.h"

#include "base/lock_waiters.h"

/* Is a process other than ours (and our parallel workers) waiting for this lock? */
static bool
ac_lock_has_waiters(const LOCKTAG *tagp)
{
	LOCKTAG		tag = *tagp;
	LWLock	   *partition;
	bool		found = false;
	uint32		i;

	partition = LockHashPartitionLock(LockTagHashCode(&tag));
	LWLockAcquire(partition, LW_SHARED);
	for (i = 0; i < ProcGlobal->allProcCount && !found; i++)
	{
		PGPROC	   *proc = &ProcGlobal->allProcs[i];
		LOCK	   *lock = proc->waitLock;

		if (lock == NULL || proc == MyProc ||
			(proc->lockGroupLeader != NULL && proc->lockGroupLeader == MyProc->lockGroupLeader))
			continue;
		found = memcmp(&lock->tag, &tag, sizeof(LOCKTAG)) == 0;
	}
	LWLockRelease(partition);
	return found;
}

/* Is a process other than ours waiting to lock relid (of this database)? */
bool
ac_relation_has_waiters(Oid relid)
{
	LOCKTAG		tag;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
	return ac_lock_has_waiters(&tag);
}

/*
 * Is a process waiting for this transaction (or its current subtransaction)
 * to end: for a row it deleted, updated or locked (a row a pass moved)?
 */
bool
ac_xact_has_waiters(void)
{
	TransactionId xids[2] = {GetCurrentTransactionIdIfAny(), GetTopTransactionIdIfAny()};
	int			i;

	for (i = 0; i < 2; i++)
	{
		LOCKTAG		tag;

		if (!TransactionIdIsValid(xids[i]) || (i == 1 && xids[1] == xids[0]))
			continue;
		SET_LOCKTAG_TRANSACTION(tag, xids[i]);
		if (ac_lock_has_waiters(&tag))
			return true;
	}
	return false;
}
