#!/bin/bash
# Stop slurmd, slurmctld and munged by their pid files; SIGKILL after 10 s, because slurmd 22.05
# sometimes hangs in shutdown on this kind of machine. Safe to run when nothing is running.
for f in /run/slurm/slurmd.pid /run/slurm/slurmctld.pid /run/munge/munged.pid; do
  [ -f "$f" ] || continue
  pid=$(cat "$f")
  kill "$pid" 2>/dev/null || continue
  for _ in $(seq 1 40); do
    { [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status"; } || break
    sleep 0.25
  done
  if [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status"; then
    kill -9 "$pid" 2>/dev/null || true
  fi
done
# slurmctld keeps its job state across restarts; a fresh cluster each time keeps tests independent.
rm -rf /var/spool/slurmctld/* /var/spool/slurmd/* 2>/dev/null || true
exit 0
