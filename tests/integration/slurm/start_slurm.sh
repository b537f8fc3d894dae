#!/bin/bash
# Start munged, slurmctld and slurmd for a single-node cluster with two fake GPUs (root, no
# systemd). Prints the node once it is idle; fails if it does not become idle within 20 s.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
mkdir -p /var/spool/slurmctld /var/spool/slurmd /var/log/slurm /run/slurm /run/munge /etc/slurm
chown munge:munge /run/munge
chmod 0755 /run/munge
for i in 0 1; do
  [ -e /dev/fakegpu$i ] || mknod -m 666 /dev/fakegpu$i c 1 3
done
sed "s/@HOSTNAME@/$(hostname -s)/" "$here/slurm.conf" > /etc/slurm/slurm.conf
cp "$here/gres.conf" /etc/slurm/gres.conf
[ -S /run/munge/munge.socket.2 ] || runuser -u munge -- /usr/sbin/munged
/usr/sbin/slurmctld
/usr/sbin/slurmd
for _ in $(seq 1 80); do
  # sinfo retries for minutes while slurmctld is down; a failed start must not hang here.
  if [ "$(timeout 2 sinfo -h -N -o %t 2>/dev/null || true)" = idle ]; then
    sinfo -N -o '%N %t %G %c %m'
    exit 0
  fi
  sleep 0.25
done
echo "start_slurm: node did not become idle" >&2
timeout 2 sinfo -N -o '%N %t %E' >&2 || true
tail -n 3 /var/log/slurm/slurmctld.log >&2 || true
exit 1
