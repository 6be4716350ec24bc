/*-------------------------------------------------------------------------
 *
 * tier_lock_order.h
 *		Table mode: writers of the archive lock <t> first (tier_lock_order.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef ARCHIVE_CLUSTER_TIER_LOCK_ORDER_H
#define ARCHIVE_CLUSTER_TIER_LOCK_ORDER_H

extern void ac_lock_order_install(void);

#endif							/* ARCHIVE_CLUSTER_TIER_LOCK_ORDER_H */
