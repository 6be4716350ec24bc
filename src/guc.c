/*-------------------------------------------------------------------------
 *
 * guc.c
 *		archive_cluster's configuration parameters, all in one place.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "utils/guc.h"

#include "archive_cluster.h"

/* archive_cluster.max_batch_rows: rows sorted and moved together at most */
int			archive_cluster_max_batch_rows = 10000000;

void
ac_define_gucs(void)
{
	DefineCustomIntVariable("archive_cluster.max_batch_rows",
							"Largest number of rows a run sorts and moves as one batch.",
							"A run moves all eligible rows of a table, sorted together, in "
							"batches of at most this many rows (but at least the table's threshold).",
							&archive_cluster_max_batch_rows,
							10000000, 1000, (int) AC_MAX_BATCH_ROWS,
							PGC_USERSET, 0,
							NULL, NULL, NULL);

	MarkGUCPrefixReserved("archive_cluster");
}
