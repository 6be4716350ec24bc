/*-------------------------------------------------------------------------
 *
 * tiers.h
 *		The columns of a registered table's two tiers (tiers.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_TIERS_H
#define ARCHIVE_CLUSTER_TIERS_H

#include "utils/relcache.h"

extern void ac_tier_columns(Relation view, Oid current, Oid archive,
							AttrNumber *cur, AttrNumber *arc);
extern void ac_child_columns(Relation parent, Relation archive, AttrNumber *cur,
							 AttrNumber *arc);
extern void ac_tiers_columns(Relation view, bool table_mode, Oid current, Relation archive,
							 AttrNumber **cur, AttrNumber **arc);
extern int	ac_view_column_of(const AttrNumber *atts, int natts, AttrNumber attnum);
extern int	ac_view_column_named(Relation view, const char *name);
extern int	ac_view_column_required(Relation view, const char *name);
extern AttrNumber ac_unviewed_counterpart(Relation cur, Relation arc, const AttrNumber *arcatt,
										  int natts, AttrNumber curattnum);

#endif							/* ARCHIVE_CLUSTER_TIERS_H */
