/*-------------------------------------------------------------------------
 *
 * key_sample.h
 *		Sampling keys from a btree index and counting the heap pages of
 *		their rows (key_sample.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_KEY_SAMPLE_H
#define ARCHIVE_CLUSTER_KEY_SAMPLE_H

#include "common/pg_prng.h"
#include "fmgr.h"
#include "utils/relcache.h"

#include "archive/loose.h"

/* The sampled keys, sorted, and how to compare and look them up. */
typedef struct AcKeys
{
	int			nkeys;
	Datum	   *keys;
	FmgrInfo	cmp;			/* btree comparison support function */
	Oid			collation;
	Oid			eqproc;			/* the "=" operator's function */
	bool		typbyval;
	int16		typlen;
} AcKeys;

/* One tier's heap pages and rows for each sampled key. */
typedef struct AcTierCounts
{
	int64	   *rows;
	int64	   *pages;
	int64	   *loose_rows;		/* on pages of the loose set (with one) */
	int64	   *loose_pages;
} AcTierCounts;

extern Oid	ac_key_index(Relation heap, AttrNumber attnum);
extern Relation ac_open_key_index(Relation heap, const char *keycol);
extern int	ac_compare_keys(const void *a, const void *b, void *arg);
extern void ac_keys_init(AcKeys *k, Relation index);
extern void ac_choose_keys(AcKeys *k, int want, pg_prng_state *rng);
extern void ac_sample_keys(Relation index, int want, pg_prng_state *rng, AcKeys *k);
extern void ac_count_tier(Relation heap, Relation index, AcKeys *k, const AcLooseSet *loose,
						  AcTierCounts *out);
extern double ac_row_bytes(Relation heap);
extern double ac_compactable_average(int nkeys, const AcTierCounts *c, double rowbytes,
									 double *avg_loose, double *avg_pages);

#endif							/* ARCHIVE_CLUSTER_KEY_SAMPLE_H */
