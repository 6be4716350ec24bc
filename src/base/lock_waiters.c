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

#include "compat.h"
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

/* subtransactions of this transaction that wrote and ended (ac_xact_watch_current) */
#define AC_WATCHED_XIDS 64
static TransactionId ac_watched[AC_WATCHED_XIDS];
static int	ac_nwatched = 0;
static LocalTransactionId ac_watched_lxid = InvalidLocalTransactionId;

/*
 * Before a subtransaction that wrote rows is released into its parent: a
 * session that waits for one of those rows waits for its transaction ID
 * (until the top transaction ends), which ac_xact_has_waiters() looks for
 * too, for the rest of this transaction.
 */
void
ac_xact_watch_current(void)
{
	TransactionId xid = GetCurrentTransactionIdIfAny();

	if (ac_watched_lxid != ac_local_xid())
	{
		ac_watched_lxid = ac_local_xid();
		ac_nwatched = 0;
	}
	if (TransactionIdIsValid(xid) && ac_nwatched < AC_WATCHED_XIDS)
		ac_watched[ac_nwatched++] = xid;
}

/* Is a process waiting for xid to end? */
static bool
ac_xid_has_waiters(TransactionId xid)
{
	LOCKTAG		tag;

	if (!TransactionIdIsValid(xid))
		return false;
	SET_LOCKTAG_TRANSACTION(tag, xid);
	return ac_lock_has_waiters(&tag);
}

/*
 * Is a process waiting for this transaction (its current subtransaction, or
 * one watched) to end: for a row it deleted, updated or locked (a row a
 * pass moved)?
 */
bool
ac_xact_has_waiters(void)
{
	TransactionId current = GetCurrentTransactionIdIfAny();
	TransactionId top = GetTopTransactionIdIfAny();
	int			i;

	if (ac_xid_has_waiters(current) || (top != current && ac_xid_has_waiters(top)))
		return true;
	if (ac_watched_lxid != ac_local_xid())
		return false;
	for (i = 0; i < ac_nwatched; i++)
	{
		if (ac_xid_has_waiters(ac_watched[i]))
			return true;
	}
	return false;
}
