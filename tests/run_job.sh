#!/bin/sh
# tests/run_job.sh JOB: run one test job of tests/run.sh.  JOB.sh is the
# command; its stdout, stderr, exit status and wall seconds go to JOB.out,
# JOB.err, JOB.status and JOB.time.
job=${1%.sh}
t0=$(date +%s.%N)
sh "$job.sh" >"$job.out" 2>"$job.err"
echo $? >"$job.status"
t1=$(date +%s.%N)
echo "$t0 $t1" | LC_ALL=C awk '{ printf "%.1f\n", $2 - $1 }' >"$job.time"
