/*-------------------------------------------------------------------------
 *
 * resume_key.h
 *		The cluster key a pass over a leaf partition stopped at
 *		(resume_key.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_RESUME_KEY_H
#define ARCHIVE_CLUSTER_RESUME_KEY_H

#include "postgres.h"

#include "access/skey.h"
#include "executor/tuptable.h"
#include "utils/relcache.h"

extern bytea *ac_resume_encode(Relation rel, const AttrNumber *attnos, int n, TupleTableSlot *slot);
extern bool ac_resume_decode(bytea *resume, Relation rel, const AttrNumber *attnos, int n,
							 Datum *values);
extern bool ac_resume_keys(Relation index, int n, const Datum *values, ScanKey header,
						   ScanKey members);

extern bytea *ac_resume_tail_mark(void);
extern bool ac_resume_is_tail_mark(bytea *resume);

#endif							/* ARCHIVE_CLUSTER_RESUME_KEY_H */
