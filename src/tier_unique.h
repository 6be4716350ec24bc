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

extern void ac_unique_check_tuple(Relation rel, HeapTuple tuple);
extern bool ac_unique_before_guard(Relation rel, Oid guard);
extern bool ac_unique_skip_check(Relation rel, Relation guard, Datum *values, bool *isnull);
extern bool ac_unique_holds_across(Relation rel, Oid indexid, Oid other);

#endif							/* ARCHIVE_CLUSTER_TIER_UNIQUE_H */
