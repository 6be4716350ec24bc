/*-------------------------------------------------------------------------
 *
 * view_buffer.h
 *		INSERTs through a registered view written in batches (view_buffer.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_VIEW_BUFFER_H
#define ARCHIVE_CLUSTER_VIEW_BUFFER_H

#include "view/view_cache.h"

extern bool ac_buffer_insert(AcTriggerEntry *e, Relation view, Datum *viewv, bool *viewn);

#endif							/* ARCHIVE_CLUSTER_VIEW_BUFFER_H */
