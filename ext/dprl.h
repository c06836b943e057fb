/*
** dprl.h: the one public symbol of dprl, for programs that link dprl in
** (make static builds ./libdprl.a with -DSQLITE_CORE) instead of loading
** dprl.so at run time.  Register it for every connection opened after:
**
**   #include <sqlite3.h>
**   #include "dprl.h"
**   sqlite3_auto_extension((void (*)(void))sqlite3_dprl_init);
**
** or call it on one connection: sqlite3_dprl_init(db, &errmsg, NULL).
*/
#ifndef DPRL_H
#define DPRL_H

#include <sqlite3.h>

/* The version (semantic versioning; CHANGELOG.md).  The one place it is
** written: the Makefile, the Python and the npm packages read it here. */
#define DPRL_VERSION "0.2.0"

#ifdef __cplusplus
extern "C" {
#endif

/* Registers dprl's functions on db.  Returns SQLITE_OK, or an error code
** with *pzErrMsg (sqlite3_malloc'd, when pzErrMsg is not NULL) saying which
** feature failed.  pApi is SQLite's API table when loaded as an extension;
** a program linked with libdprl.a may pass NULL. */
int sqlite3_dprl_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

#ifdef __cplusplus
}
#endif

#endif
