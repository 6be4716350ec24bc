/*-------------------------------------------------------------------------
 *
 * probe.h
 *		A look-up by one key of a registered table planned without the
 *		archive, which is probed at run time only when the first tier has no
 *		row (planner.c, probe_quals.c, probe_path.c, probe_scan.c,
 *		probe_table.c, probe_view.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_PROBE_H
#define ARCHIVE_CLUSTER_PROBE_H

#include "postgres.h"
#include "nodes/pathnodes.h"
#include "nodes/params.h"
#include "nodes/plannodes.h"

/* What the planner hook decided for the query being planned. */
typedef struct AcProbeTarget
{
	Query	   *parse;			/* the query planned without the archive */
	Oid			first;			/* the tier read first: <t> or <t>_current */
	Oid			archive;		/* <t>_archive */
	Oid			archive_index;	/* its unique index on the key */
	int			nkeys;
	AttrNumber	attnos[INDEX_MAX_KEYS]; /* the key's columns in first */
	Oid			opfamilies[INDEX_MAX_KEYS]; /* and their btree opfamilies */
	Oid			opcintypes[INDEX_MAX_KEYS];
	Oid			check_index;	/* table mode's UPDATE/DELETE: <t>'s unique index
								 * whose key is beyond the archive's (checked
								 * again before the first row); else InvalidOid */
	List	   *check_values;	/* then: the key's Consts, in index order */
	bool		seen;			/* the first tier's paths were wrapped */
} AcProbeTarget;

/* probe_quals.c */
extern AttrNumber ac_probe_equality(Node *clause, Index varno, Oid opfamily, Oid opcintype,
									Node **value, Oid *opno);
extern bool ac_probe_quals_ok(Node *quals, Index varno);
extern bool ac_probe_reads_sysattr(Query *parse);
extern bool ac_probe_references(Query *parse, Oid a, int na, Oid b, int nb);

#define AC_PROBE_NAME "ArchiveClusterProbe"

/* probe_path.c */
extern void ac_probe_wrap_paths(PlannerInfo *root, RelOptInfo *rel, const AcProbeTarget *t);

/* probe_scan.c */
extern PGDLLIMPORT const struct CustomScanMethods ac_probe_scan_methods;
extern void ac_probe_scan_register(void);

/* probe_table.c, probe_view.c: may parse skip the archive? */
extern bool ac_probe_table_target(Query *parse, AcProbeTarget *target);
extern bool ac_probe_view_target(Query *parse, AcProbeTarget *target);

/* planner.c */
extern void ac_probe_install(void);

#endif							/* ARCHIVE_CLUSTER_PROBE_H */
