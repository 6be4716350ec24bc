/*-------------------------------------------------------------------------
 *
 * resume_key.c
 *		Where a pass over a leaf partition that stopped goes on: the cluster
 *		key of the row it stopped at, stored (archive_cluster_leaves) and
 *		turned back into a row comparison the index scan starts from.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/nbtree.h"
#include "access/skey.h"
#include "access/stratnum.h"
#include "lib/stringinfo.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"

#include "partition/resume_key.h"

/*
 * The resume point: the cluster key of the row a pass stopped at, each
 * column as the bytes of its datum (by value: the Datum; varlena: detoasted;
 * fixed length: its bytes) with its type, so that it means the same whatever
 * the session's client_encoding or DateStyle.  As an opaque bytea in
 * archive_cluster_leaves: int32 columns, then per column Oid type, int32
 * length, bytes.
 */
bytea *
ac_resume_encode(Relation rel, const AttrNumber *attnos, int n, TupleTableSlot *slot)
{
	StringInfoData buf;
	bytea	   *result;
	int			i;

	initStringInfo(&buf);
	appendBinaryStringInfo(&buf, (char *) &n, sizeof(int32));
	for (i = 0; i < n; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnos[i] - 1);
		bool		isnull;
		Datum		value = slot_getattr(slot, attnos[i], &isnull);
		int32		len;
		char	   *bytes;

		if (isnull)
			return NULL;		/* NULLs sort last: the next pass starts over */
		if (att->attbyval)
		{
			len = sizeof(Datum);
			bytes = (char *) &value;
		}
		else if (att->attlen == -1)
		{
			struct varlena *v = pg_detoast_datum((struct varlena *) DatumGetPointer(value));

			len = VARSIZE(v);
			bytes = (char *) v;
		}
		else
		{
			len = att->attlen > 0 ? att->attlen : strlen(DatumGetCString(value)) + 1;
			bytes = DatumGetPointer(value);
		}
		appendBinaryStringInfo(&buf, (char *) &att->atttypid, sizeof(Oid));
		appendBinaryStringInfo(&buf, (char *) &len, sizeof(int32));
		appendBinaryStringInfo(&buf, bytes, len);
	}
	result = palloc(VARHDRSZ + buf.len);
	SET_VARSIZE(result, VARHDRSZ + buf.len);
	memcpy(VARDATA(result), buf.data, buf.len);
	pfree(buf.data);
	return result;
}

/*
 * The cluster key a pass stopped at, into values[]; false when there is
 * none, or it does not fit the leaf's columns any more (their number or
 * types changed).
 */
bool
ac_resume_decode(bytea *resume, Relation rel, const AttrNumber *attnos, int n, Datum *values)
{
	char	   *p;
	char	   *end;
	int32		ncols;
	int			i;

	if (resume == NULL)
		return false;
	p = VARDATA_ANY(resume);
	end = p + VARSIZE_ANY_EXHDR(resume);
	if (end - p < (int) sizeof(int32))
		return false;
	memcpy(&ncols, p, sizeof(int32));
	p += sizeof(int32);
	if (ncols != n)
		return false;
	for (i = 0; i < n; i++)
	{
		Form_pg_attribute att = TupleDescAttr(RelationGetDescr(rel), attnos[i] - 1);
		Oid			typid;
		int32		len;

		if (end - p < (int) (sizeof(Oid) + sizeof(int32)))
			return false;
		memcpy(&typid, p, sizeof(Oid));
		memcpy(&len, p + sizeof(Oid), sizeof(int32));
		p += sizeof(Oid) + sizeof(int32);
		if (typid != att->atttypid || len < 0 || end - p < len ||
			(att->attbyval && len != sizeof(Datum)) || (att->attlen > 0 && !att->attbyval && len != att->attlen))
			return false;
		if (att->attbyval)
			memcpy(&values[i], p, sizeof(Datum));
		else
		{
			char	   *copy = palloc(len);

			memcpy(copy, p, len);
			values[i] = PointerGetDatum(copy);
		}
		p += len;
	}
	return p == end;
}

/*
 * Set *header (and members[]) to the row comparison "(cluster key) >=
 * values" in the index's operator families, as the executor builds one for
 * a RowCompareExpr (one column: a plain comparison; nbtree expects a row of
 * two members at least); false if a family has no such function.
 */
bool
ac_resume_keys(Relation index, int n, const Datum *values, ScanKey header, ScanKey members)
{
	int			i;

	if (n == 1)
	{
		/* one column: a plain "col >= value", as the planner makes of a one-column row */
		Oid			optype = index->rd_opcintype[0];
		Oid			geop = get_opfamily_member(index->rd_opfamily[0], optype, optype,
											   BTGreaterEqualStrategyNumber);

		if (!OidIsValid(geop))
			return false;
		ScanKeyEntryInitialize(header, 0, 1, BTGreaterEqualStrategyNumber, optype,
							   index->rd_indcollation[0], get_opcode(geop), values[0]);
		return true;
	}
	memset(members, 0, sizeof(ScanKeyData) * n);
	for (i = 0; i < n; i++)
	{
		Oid			optype = index->rd_opcintype[i];
		/* members compare with the family's three-way support function */
		Oid			cmpproc = get_opfamily_proc(index->rd_opfamily[i], optype, optype,
												BTORDER_PROC);

		if (!OidIsValid(cmpproc))
			return false;
		ScanKeyEntryInitialize(&members[i], SK_ROW_MEMBER | (i == n - 1 ? SK_ROW_END : 0),
							   i + 1, BTGreaterEqualStrategyNumber, optype,
							   index->rd_indcollation[i], cmpproc, values[i]);
	}
	/* the header has no function: set as the executor sets one */
	memset(header, 0, sizeof(ScanKeyData));
	header->sk_flags = SK_ROW_HEADER;
	header->sk_attno = 1;
	header->sk_strategy = BTGreaterEqualStrategyNumber;
	header->sk_argument = PointerGetDatum(members);
	return true;
}

/*
 * The mark a tail pass leaves when it stops (no columns): the next check
 * measures the leaf's tail again at once, without waiting for a VACUUM.
 */
bytea *
ac_resume_tail_mark(void)
{
	bytea	   *mark = palloc(VARHDRSZ + sizeof(int32));
	int32		zero = 0;

	SET_VARSIZE(mark, VARHDRSZ + sizeof(int32));
	memcpy(VARDATA(mark), &zero, sizeof(int32));
	return mark;
}

bool
ac_resume_is_tail_mark(bytea *resume)
{
	int32		ncols;

	if (resume == NULL || VARSIZE_ANY_EXHDR(resume) != sizeof(int32))
		return false;
	memcpy(&ncols, VARDATA_ANY(resume), sizeof(int32));
	return ncols == 0;
}
