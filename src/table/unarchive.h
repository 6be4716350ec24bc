/*-------------------------------------------------------------------------
 *
 * unarchive.h
 *		Table mode: bring an archived row back into <t> (unarchive.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_UNARCHIVE_H
#define ARCHIVE_CLUSTER_UNARCHIVE_H

#include "postgres.h"

#include "utils/relcache.h"

extern bool ac_unarchive_key(Relation cur, Oid archiveid, Oid indexid, const Oid *eqprocs,
							 int nkeys, Datum *keyv, bool *keyn, bool nulls_equal,
							 CommandId cid);

#endif							/* ARCHIVE_CLUSTER_UNARCHIVE_H */
