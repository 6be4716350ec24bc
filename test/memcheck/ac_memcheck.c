/*-------------------------------------------------------------------------
 *
 * ac_memcheck.c
 *		valgrind function wrappers that let memcheck see memory PostgreSQL
 *		frees into its own memory contexts, on a release build.
 *
 *		Debian's PostgreSQL is built without USE_VALGRIND, so memcheck only
 *		sees malloc and free.  A memory context keeps its first block
 *		(the "keeper") across resets, and a deleted context of the standard
 *		sizes goes to a free list with that block: pfree, MemoryContextReset
 *		and MemoryContextDelete (SPI_finish, end of a transaction, a
 *		per-tuple context) leave the old bytes readable, and a read of them
 *		goes unnoticed.  These wrappers call the real function and then
 *		mark the memory it gave back as undefined, as a USE_VALGRIND build
 *		would mark it inaccessible: a later branch on it, or a syscall that
 *		sends it (a row to the client, a page to disk), is reported with
 *		the stack of the reader.  Blocks that PostgreSQL returns to malloc
 *		are left alone: memcheck already knows they are freed.
 *
 *		Loaded with LD_PRELOAD into postgres running under valgrind
 *		(test/memcheck/postgres); valgrind redirects the named functions of
 *		the main executable (soname "NONE") to the wrappers below.  The
 *		layouts mirror PostgreSQL 15's private structs in aset.c; the build
 *		refuses other major versions.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "nodes/memnodes.h"
#include "storage/sinval.h"
#include "utils/memutils.h"

#include <valgrind/memcheck.h>
#include <valgrind/valgrind.h>

#if PG_VERSION_NUM < 150000 || PG_VERSION_NUM >= 160000
#error "ac_memcheck.c mirrors PostgreSQL 15's aset.c"
#endif

/* aset.c's AllocBlockData */
typedef struct AcBlock
{
	void	   *aset;
	struct AcBlock *prev;
	struct AcBlock *next;
	char	   *freeptr;
	char	   *endptr;
} AcBlock;

/* aset.c's AllocSetContext */
typedef struct AcAllocSet
{
	MemoryContextData header;
	AcBlock    *blocks;
	void	   *freelist[11];
	Size		initBlockSize;
	Size		maxBlockSize;
	Size		nextBlockSize;
	Size		allocChunkLimit;
	AcBlock    *keeper;
	int			freeListIndex;
} AcAllocSet;

/* aset.c's AllocChunkData of a build without MEMORY_CONTEXT_CHECKING */
typedef struct AcChunk
{
	Size		size;
	void	   *aset;
} AcChunk;

#define AC_BLOCKHDRSZ	MAXALIGN(sizeof(AcBlock))

/* The bytes a reset leaves in the keeper block, found before the call. */
typedef struct AcKept
{
	char	   *start;
	char	   *end;
} AcKept;

static AcKept
ac_kept_bytes(MemoryContext context, bool deleting)
{
	AcKept		kept = {NULL, NULL};
	AcAllocSet *set = (AcAllocSet *) context;

	if (context == NULL || !IsA(context, AllocSetContext) || set->keeper == NULL)
		return kept;
	/* a deleted context off the free list goes back to malloc whole */
	if (deleting && set->freeListIndex < 0)
		return kept;
	kept.start = (char *) set->keeper + AC_BLOCKHDRSZ;
	kept.end = set->keeper->endptr;
	return kept;
}

static void
ac_forget(AcKept kept)
{
	if (kept.start != NULL && kept.end > kept.start)
		VALGRIND_MAKE_MEM_UNDEFINED(kept.start, kept.end - kept.start);
}

void		I_WRAP_SONAME_FNNAME_ZU(NONE, MemoryContextDelete) (MemoryContext context);
void		I_WRAP_SONAME_FNNAME_ZU(NONE, MemoryContextDelete) (MemoryContext context)
{
	OrigFn		fn;
	AcKept		kept = ac_kept_bytes(context, true);

	VALGRIND_GET_ORIG_FN(fn);
	CALL_FN_v_W(fn, context);
	ac_forget(kept);
}

void		I_WRAP_SONAME_FNNAME_ZU(NONE, MemoryContextReset) (MemoryContext context);
void		I_WRAP_SONAME_FNNAME_ZU(NONE, MemoryContextReset) (MemoryContext context)
{
	OrigFn		fn;
	AcKept		kept = ac_kept_bytes(context, false);

	VALGRIND_GET_ORIG_FN(fn);
	CALL_FN_v_W(fn, context);
	ac_forget(kept);
}

void		I_WRAP_SONAME_FNNAME_ZU(NONE, MemoryContextResetOnly) (MemoryContext context);
void		I_WRAP_SONAME_FNNAME_ZU(NONE, MemoryContextResetOnly) (MemoryContext context)
{
	OrigFn		fn;
	AcKept		kept = ac_kept_bytes(context, false);

	VALGRIND_GET_ORIG_FN(fn);
	CALL_FN_v_W(fn, context);
	ac_forget(kept);
}

/*
 * A small chunk goes to its context's free list; a large one (its own
 * block) to free(), which memcheck sees by itself.
 */
void		I_WRAP_SONAME_FNNAME_ZU(NONE, pfree) (void *pointer);
void		I_WRAP_SONAME_FNNAME_ZU(NONE, pfree) (void *pointer)
{
	OrigFn		fn;
	AcChunk    *chunk = (AcChunk *) ((char *) pointer - sizeof(AcChunk));
	AcAllocSet *set = (AcAllocSet *) chunk->aset;
	Size		size = 0;

	if (set != NULL && IsA(set, AllocSetContext) &&
		chunk->size <= set->allocChunkLimit)
		size = chunk->size;
	VALGRIND_GET_ORIG_FN(fn);
	CALL_FN_v_W(fn, pointer);
	if (size > 0)
		VALGRIND_MAKE_MEM_UNDEFINED(pointer, size);
}

/*
 * Invalidation messages go through a ring buffer in shared memory.  memcheck
 * keeps one view of memory per process: a slot this backend once filled with
 * a message that has padding (a catcache message is 12 of the 16 bytes)
 * stays "undefined" here after another backend has written a full message
 * into it, and reading that message (smgrclosenode's hash key) is then
 * reported.  A USE_VALGRIND build marks each message defined before it goes
 * into the ring (PostgreSQL commit 0564bbe7, inval.c); this does the same
 * for every message this process sends.
 */
void		I_WRAP_SONAME_FNNAME_ZU(NONE, SIInsertDataEntries) (const void *data, int n);
void		I_WRAP_SONAME_FNNAME_ZU(NONE, SIInsertDataEntries) (const void *data, int n)
{
	OrigFn		fn;

	if (data != NULL && n > 0)
		VALGRIND_MAKE_MEM_DEFINED(data, (Size) n * sizeof(SharedInvalidationMessage));
	VALGRIND_GET_ORIG_FN(fn);
	CALL_FN_v_WW(fn, data, n);
}
