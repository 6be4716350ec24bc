/*-------------------------------------------------------------------------
 *
 * view_keys.h
 *		The identity key across the two tables of a registered view (view_keys.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_VIEW_KEYS_H
#define ARCHIVE_CLUSTER_VIEW_KEYS_H

#include "view/view_cache.h"

extern void ac_key_violation(const char *viewname, Oid other);
extern void ac_check_key_unique(Relation view, AcTriggerEntry *e, int other_tier,
								Datum *rowv, bool *rown);

#endif							/* ARCHIVE_CLUSTER_VIEW_KEYS_H */
