/*-------------------------------------------------------------------------
 *
 * view_keys.c
 *		The identity key's uniqueness across the two tables of a registered
 *		view: each table's unique index sees only its own rows, so a key
 *		written to one is looked up in the other's key index, with a dirty
 *		snapshot, waiting for a writer in progress as a unique index does
 *		(key_probe.c).
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/relation.h"
#include "access/relscan.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/pg_attribute.h"
#include "catalog/pg_operator.h"
#include "commands/sequence.h"
#include "commands/trigger.h"
#include "executor/executor.h"
#include "executor/spi.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/datum.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "archive_cluster.h"
#include "compat.h"
#include "view/view_cache.h"
#include "base/key_probe.h"
#include "view/view_keys.h"
#include "registry/tiers.h"

void
ac_key_violation(const char *viewname, Oid other)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("duplicate key value violates the row identity of \"%s\"", viewname),
			 errdetail("A row with the same key is already in %s.", get_rel_name(other))));
}

/*
 * The identity key is unique within each table; keep it unique across the
 * two.  After writing a row with key values keyv into one tier, look for the
 * key in the other tier: through its key index with a dirty snapshot (see
 * ac_key_exists), else with the latest snapshot (so that a run or another
 * writer that committed meanwhile is seen, also under REPEATABLE READ).
 */
void
ac_check_key_unique(Relation view, AcTriggerEntry *e, int other_tier,
					Datum *rowv, bool *rown)
{
	Datum		keyv[INDEX_MAX_KEYS];
	char		keyn[INDEX_MAX_KEYS];
	bool		found;
	int			rc;
	int			i;

	if (OidIsValid(e->keyindex[other_tier]))
	{
		bool		keynull[INDEX_MAX_KEYS];

		for (i = 0; i < e->nkeys; i++)
		{
			keyv[i] = rowv[e->keycols[i]];
			keynull[i] = rown[e->keycols[i]];
		}
		found = ac_key_exists(other_tier == 0 ? e->current : e->archive,
							  e->keyindex[other_tier], e->keyeqproc[other_tier],
							  e->nkeys, keyv, keynull, false);
	}
	else
	{
		for (i = 0; i < e->nkeys; i++)
		{
			keyv[i] = rowv[e->keycols[i]];
			keyn[i] = rown[e->keycols[i]] ? 'n' : ' ';
		}
		/* this statement's own writes to the other tier too */
		CommandCounterIncrement();
		if (SPI_connect() != SPI_OK_CONNECT)
			elog(ERROR, "SPI_connect failed");
		rc = SPI_execute_snapshot(e->tiers[other_tier].exists, keyv, keyn,
								  GetLatestSnapshot(), InvalidSnapshot,
								  true, false, 1);
		if (rc != SPI_OK_SELECT)
			elog(ERROR, "SPI_execute_snapshot returned %s", SPI_result_code_string(rc));
		found = SPI_processed > 0;
		SPI_finish();
	}
	if (found)
		ac_key_violation(RelationGetRelationName(view),
						 other_tier == 0 ? e->current : e->archive);
}

