/*-------------------------------------------------------------------------
 *
 * view_cache.h
 *		The cached state of a registered view's trigger (view_cache.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_VIEW_CACHE_H
#define ARCHIVE_CLUSTER_VIEW_CACHE_H

#include "postgres.h"
#include "access/attnum.h"
#include "executor/spi.h"
#include "utils/relcache.h"

/* The statements of one tier (current or archive). */
typedef struct AcTierPlans
{
	SPIPlanPtr	update;			/* $1..$n new values, then key, then old row */
	SPIPlanPtr	delete;			/* key, then old row */
	SPIPlanPtr	exists;			/* key */
} AcTierPlans;

typedef struct AcTriggerEntry
{
	Oid			view;			/* hash key */
	bool		valid;
	Oid			current;
	Oid			archive;
	int			natts;			/* columns of the view */
	int			nkeys;
	int			keycols[INDEX_MAX_KEYS];	/* view column index (0-based) */
	bool		*insertable;	/* per view column: goes into INSERT */
	bool		*cur_settable;	/* per view column: SET in UPDATE of current */
	bool		*arc_settable;	/* per view column: SET in UPDATE of archive */
	bool		*always_identity;	/* per view column */
	int			always_col;		/* the GENERATED ALWAYS identity column (view
								 * column index), or -1 */
	Oid		   *identity_seq;	/* per view column: current's identity sequence */
	Oid		   *types;
	int16	   *typlens;
	bool	   *typbyvals;
	SPIPlanPtr	insert;
	AcTierPlans tiers[2];		/* 0 = current, 1 = archive */
	bool		direct_insert;	/* INSERT may skip the prepared statement */
	bool		batch_insert;	/* ... and be written at the end of the statement */
	TupleDesc	cur_desc;
	AttrNumber	keycur[INDEX_MAX_KEYS]; /* the key's columns in current */
	AttrNumber *curatt;			/* per view column: its column of current */
	AttrNumber *arcatt;			/* per view column: its column of archive */
	int		   *cur_from_view;	/* per column of current: view column or -1 */
	int			cur_natts;
	Oid			keyindex[2];	/* the key's unique index in each tier */
	Oid			keyeqproc[2][INDEX_MAX_KEYS];
	MemoryContext mcxt;
} AcTriggerEntry;

extern AcTriggerEntry *ac_trigger_entry(Relation view);
extern void ac_check_shape(bool ok, const char *what);

#endif							/* ARCHIVE_CLUSTER_VIEW_CACHE_H */
