/*-------------------------------------------------------------------------
 *
 * heap_datum_check.c
 *		Test build only (test/pg.sh 17): a stand-in for heap_datum_check(),
 *		which PostgreSQL 17.12's headers call from heap_getattr() and the
 *		17.10 server used for the tests here does not have.
 *
 *		17.12 added versioned composite datums and this check of them;
 *		17.10 makes no versioned datum, so for it the check has nothing to
 *		do.  A real installation builds against its own server's headers
 *		(make PG_CONFIG=...) and never uses this file.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"

void
heap_datum_check(HeapTupleHeader tup, TupleDesc tupleDesc)
{
}
