/*-------------------------------------------------------------------------
 *
 * launcher.h
 *		The launcher of the worker pool (launcher.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef AC_LAUNCHER_H
#define AC_LAUNCHER_H

extern void ac_launcher_register(void);

#endif							/* AC_LAUNCHER_H */
