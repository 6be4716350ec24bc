/*-------------------------------------------------------------------------
 *
 * compat.h
 *		Every difference between the supported PostgreSQL versions (15 and
 *		18) that archive_cluster's sources meet, in one place.
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_COMPAT_H
#define ARCHIVE_CLUSTER_COMPAT_H

#include "postgres.h"

#if PG_VERSION_NUM < 150000
#error "archive_cluster requires PostgreSQL 15 or later"
#endif

#include "executor/executor.h"
#include "utils/acl.h"

/*
 * ExecInsertIndexTuples() gained an "onlySummarizing" argument in 16.
 */
#if PG_VERSION_NUM >= 160000
#define ac_insert_index_tuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL, false)
#else
#define ac_insert_index_tuples(rri, slot, estate) \
	ExecInsertIndexTuples((rri), (slot), (estate), false, false, NULL, NIL)
#endif

/*
 * Permission checks on relations: pg_class_ownercheck() became
 * object_ownercheck() in 16.
 */
#if PG_VERSION_NUM >= 160000
#define ac_class_ownercheck(relid, roleid) \
	object_ownercheck(RelationRelationId, (relid), (roleid))
#else
#define ac_class_ownercheck(relid, roleid) \
	pg_class_ownercheck((relid), (roleid))
#endif

#endif							/* ARCHIVE_CLUSTER_COMPAT_H */
