/*-------------------------------------------------------------------------
 *
 * tier_unique_cache.h
 *		Table mode: the per-backend cache of a tier's cross-tier unique
 *		checks (tier_unique_cache.c), for tier_unique.c.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_TIER_UNIQUE_CACHE_H
#define ARCHIVE_CLUSTER_TIER_UNIQUE_CACHE_H

#include "access/attnum.h"
#include "access/tupdesc.h"
#include "storage/lock.h"
#include "utils/memutils.h"
#include "utils/relcache.h"

#include "archive_cluster.h"
#include "table/key_range.h"

/* A unique index of a tier and its counterpart on the other tier. */
typedef struct AcUniquePair
{
	Oid			own;			/* unique index of the trigger's tier */
	Oid			other;			/* its counterpart on the other tier */
	Oid			named;			/* <t>'s index of the two, named in errors */
	bool		nulls_equal;	/* NULLS NOT DISTINCT */
	int			nkeys;
	Oid			eqprocs[INDEX_MAX_KEYS];
	Oid			opfamilies[INDEX_MAX_KEYS]; /* of own's key columns */
	Oid			opcintypes[INDEX_MAX_KEYS];
	bool		valid;			/* own is valid (else being built, or left invalid) */
	bool		simple;			/* key columns only: no expression, no predicate */
	AttrNumber	attnos[INDEX_MAX_KEYS]; /* if simple */
	AcKeyRange *range;			/* a pair of <t>: the archive's largest key */
} AcUniquePair;

/* What the trigger of one tier needs, cached per backend. */
typedef struct AcUniqueEntry
{
	Oid			relid;			/* hash key: the tier */
	bool		valid;
	Oid			parent;			/* <t>; InvalidOid: not registered in table mode */
	Oid			other;			/* the other tier */
	int			npairs;
	AcUniquePair *pairs;
	Oid			missing;		/* a unique index without counterpart */
	Oid			last_unique;	/* the highest OID of the tier's unique indexes */
	TupleDesc	desc;			/* the tier's rows, to read keys from */
	bool		probe_tiers;	/* tier_probe.c: <t>'s only child is the
								 * archive and both tiers have guards (only a
								 * yes is kept: a child's DROP does not
								 * invalidate <t>) */
	Oid			probe_arc_guard;	/* then: the archive's first guard index */
	MemoryContext cxt;			/* pairs, desc and ranges; NULL if none */
	uint64		fill;			/* which fill of the cache this is */
	Oid			locked;			/* the other tier, locked in this */
	LocalTransactionId locked_lxid; /* (sub)transaction */
	SubTransactionId locked_subid;
} AcUniqueEntry;

extern bool ac_tier_config(Oid relid, AcTableConfig *cfg);
extern AcUniqueEntry *ac_unique_entry_get(Relation rel);
extern AcUniqueEntry *ac_unique_entry_copy(AcUniqueEntry *e);
extern AcUniqueEntry *ac_unique_entry_find(Oid relid);
extern void ac_missing_counterpart(AcUniqueEntry *e);

#endif							/* ARCHIVE_CLUSTER_TIER_UNIQUE_CACHE_H */
