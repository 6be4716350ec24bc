/*-------------------------------------------------------------------------
 *
 * view_identity.h
 *		Identity columns of a registered view (view_identity.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_VIEW_IDENTITY_H
#define ARCHIVE_CLUSTER_VIEW_IDENTITY_H

#include "view/view_cache.h"

extern void ac_check_always_identity(AcTriggerEntry *e, Relation view,
									 Datum *values, bool *nulls);

#endif							/* ARCHIVE_CLUSTER_VIEW_IDENTITY_H */
