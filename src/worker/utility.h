/*-------------------------------------------------------------------------
 *
 * utility.h
 *		The ProcessUtility hook (utility.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AC_UTILITY_H
#define AC_UTILITY_H

extern void ac_utility_hook_install(void);

#endif							/* AC_UTILITY_H */
