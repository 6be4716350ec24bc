/*-------------------------------------------------------------------------
 *
 * key_probe.h
 *		Is a key in a table? (key_probe.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_KEY_PROBE_H
#define ARCHIVE_CLUSTER_KEY_PROBE_H

#include "postgres.h"

#include "executor/tuptable.h"
#include "utils/relcache.h"

extern bool ac_key_find(Relation rel, Relation idx, const Oid *eqprocs, int nkeys,
						Datum *keyv, bool *keyn, bool nulls_equal, TupleTableSlot *slot);
extern bool ac_key_exists(Oid heapid, Oid indexid, const Oid *eqprocs, int nkeys,
						  Datum *keyv, bool *keyn, bool nulls_equal);

#endif							/* ARCHIVE_CLUSTER_KEY_PROBE_H */
