/*-------------------------------------------------------------------------
 *
 * tier_unique.h
 *		Table mode: every unique index of <t> holds across <t> and its
 *		archive (tier_unique.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_TIER_UNIQUE_H
#define ARCHIVE_CLUSTER_TIER_UNIQUE_H

#include "access/htup.h"
#include "utils/relcache.h"

extern void ac_unique_check_tuple(Relation rel, HeapTuple tuple, bool upsert);
extern bool ac_unique_upsert_pending(Relation rel);
extern void ac_unique_upsert_taken(void);
/* what a guard index does with a row (ac_unique_guard_action) */
typedef enum AcGuardAction
{
	AC_GUARD_SKIP,				/* nothing to look up */
	AC_GUARD_CHECK,				/* check it now */
	AC_GUARD_NOTE				/* check it once its index entries are all in */
} AcGuardAction;

extern AcGuardAction ac_unique_guard_action(Relation rel, Relation guard, Datum *values,
											bool *isnull);
extern bool ac_unique_row_beyond(Oid relid, const AttrNumber *cols, int ncols,
								 const Datum *values, const bool *isnull);
extern bool ac_unique_holds_across(Relation rel, Oid indexid, Oid other);
extern void ac_unique_lock_parent(Relation rel);
extern void ac_unique_lock_parent_of(Oid relid);

#endif							/* ARCHIVE_CLUSTER_TIER_UNIQUE_H */
