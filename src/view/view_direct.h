/*-------------------------------------------------------------------------
 *
 * view_direct.h
 *		Direct writes of the view's rows into <t>_current (view_direct.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_VIEW_DIRECT_H
#define ARCHIVE_CLUSTER_VIEW_DIRECT_H

#include "view/view_cache.h"

extern bool ac_direct_insert(AcTriggerEntry *e, Datum *viewv, bool *viewn);
extern bool ac_direct_update(AcTriggerEntry *e, Datum *oldv, bool *oldn, Datum *newv, bool *newn);

#endif							/* ARCHIVE_CLUSTER_VIEW_DIRECT_H */
