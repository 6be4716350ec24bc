/*-------------------------------------------------------------------------
 *
 * key_range.h
 *		Table mode: is a key beyond every key of the archive? (key_range.c)
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_KEY_RANGE_H
#define ARCHIVE_CLUSTER_KEY_RANGE_H

#include "fmgr.h"
#include "utils/relcache.h"

/* The largest key of one archive index, as a backend last read it. */
typedef struct AcKeyRange
{
	Oid			archive;
	Oid			index;
	int			nkeys;
	FmgrInfo	cmp[INDEX_MAX_KEYS];	/* the index's btree order */
	Oid			collation[INDEX_MAX_KEYS];
	int16		typlen[INDEX_MAX_KEYS];
	bool		typbyval[INDEX_MAX_KEYS];
	bool		bound_valid;	/* read while no batch was active */
	uint64		bound_gen;		/* the shared counter when read */
	bool		empty;			/* no entry at all */
	Datum		bound[INDEX_MAX_KEYS];
	bool		bound_null[INDEX_MAX_KEYS];
	MemoryContext boundcxt;		/* bound's values */
} AcKeyRange;

extern void ac_key_range_init_hooks(void);
extern AcKeyRange *ac_key_range_create(Relation index, Oid archive, MemoryContext cxt);
extern bool ac_key_range_beyond(AcKeyRange *r, Datum *values, bool *isnull);
extern void ac_key_range_batch_begin(Oid archive);
extern void ac_key_range_batch_end(void);
extern void ac_key_range_bump(Oid archive);

#endif							/* ARCHIVE_CLUSTER_KEY_RANGE_H */
