/*-------------------------------------------------------------------------
 *
 * lock_waiters.c
 *		Is another session waiting for a lock on a relation of this
 *		database: a pass over a leaf partition gives way to it between
 *		pages (partition/leaf_pass.c), so that a DROP or DETACH of the leaf,
 *		and the queries queued behind it, wait for one page and a commit.
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

#include "miscadmin.h"
#include "storage/lock.h"
#include "storage/lwlock.h"
#include "storage/proc.h"

#include "base/lock_waiters.h"

/* Is a process other than ours (and our parallel workers) waiting to lock relid? */
bool
ac_relation_has_waiters(Oid relid)
{
	LOCKTAG		tag;
	LWLock	   *partition;
	bool		found = false;
	uint32		i;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
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
