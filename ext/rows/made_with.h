/*
** made_with.h: what first-visit statistics were made with, carried with
** them so that a release from merged statistics can refuse statistics made
** with other parameters (ALGORITHMS.md §9).
**
**   {"gamma":0.9,"rmin":0,"rmax":1,"fmin":0,"fmax":9,"n_states":10,
**    "max_states":null,"dialect":"postgres","version":"0.2.0"}
**
** fmin and fmax are the values used (defaults applied); max_states is null
** when there was no contribution bound.  dp_fv_stats and dp_first_visit
** write it (dialect "dprl"), as do the files of sql/<dialect>/ (column
** made_with).  The parameters must equal the release's options exactly;
** dialect and version say where the statistics were made and are not
** compared (shards of different engines merge).
*/
#ifndef DPRL_MADE_WITH_H
#define DPRL_MADE_WITH_H

#include "base/core.h"
#include "rows/first_visit.h"

/* Append the object for rule and n_states. */
void dprl_made_with_write(dprl_buf *b, const dprl_return_rule *rule, int64_t n_states,
                          const char *dialect, const char *version);

/* Check text[0..len) against rule and n_states: an object with exactly the
** keys above, each parameter equal to the option's, max_states included
** (rule->max_states, 0: none).  *bound = its max_states (0: null).  fn names the function; shard (may be NULL) says
** whose statistics these are in messages ("buckets 4..7").  Messages name
** the parameter and both values:
**   "dp_lsw_from_stats: the statistics of buckets 4..7 were made with
**    gamma = 0.95 (made_with, dialect postgres), but option gamma = 0.9" */
int dprl_made_with_check(const char *text, size_t len, const dprl_return_rule *rule,
                         int64_t n_states, const char *fn, const char *shard, int64_t *bound,
                         dprl_error *err);

#endif
