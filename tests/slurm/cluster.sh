#!/usr/bin/env bash
# A one-node SLURM cluster on localhost, for tests/test_slurm.py and .ci/run.
#
#   tests/slurm/cluster.sh install    Debian's slurmctld, slurmd, slurm-client and munge (apt, as root)
#   tests/slurm/cluster.sh up DIR     start munged, slurmctld and slurmd with all state in DIR (new or
#                                     empty); prints the SLURM_CONF to export for sbatch, squeue, ...
#   tests/slurm/cluster.sh down DIR   cancel the cluster's jobs and stop its three daemons
#
# No systemd: the daemons are plain processes with their own munge key, socket, ports, pid files and logs
# in DIR. One file outside DIR: /etc/slurm/slurm.conf, a link to DIR/slurm.conf while the cluster is up,
# because the executor plugin's job step (snakemake-executor-plugin-slurm-jobstep 0.6.1) removes every
# SLURM_* variable, SLURM_CONF included, before it calls srun inside the job, so srun reads the default
# path. `up` refuses a machine that has its own /etc/slurm/slurm.conf; `down` removes only its own link.
#
# Exit status: 0 done, 1 failed, 3 this machine cannot host the test cluster (not root, SLURM of its own).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
SYSTEM_CONF=/etc/slurm/slurm.conf

die() { echo "cluster.sh: $*" >&2; exit 1; }
cannot() { echo "cluster.sh: $*" >&2; exit 3; }

install() {
  local missing=()
  for tool in munged slurmctld slurmd sbatch squeue; do command -v "$tool" >/dev/null || missing+=("$tool"); done
  [ ${#missing[@]} -eq 0 ] && { echo "SLURM and munge are installed"; return; }
  [ "$(id -u)" -eq 0 ] || die "installing needs root (missing: ${missing[*]})"
  # No daemon may start at install: without systemd the packages' init scripts would start munged,
  # and slurmctld and slurmd would fail (no /etc/slurm/slurm.conf) and fail the install with them.
  local policy=/usr/sbin/policy-rc.d made_policy=""
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && made_policy=1
  fi
  # slurm-wlm's packages without recommends: no slurmdbd, no MariaDB (see slurm.conf.in).
  local status=0
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    slurmctld slurmd slurm-client munge >/dev/null || status=$?
  [ -n "$made_policy" ] && rm -f "$policy"
  [ "$status" -eq 0 ] || die "apt-get could not install slurmctld slurmd slurm-client munge"
  echo "installed: $(slurmctld -V), $(munged -V 2>&1 | awk '{print $1}')"
}

free_port() {  # two consecutive free TCP ports on localhost: slurmctld's and slurmd's
  python3 - <<'PY'
import socket
for port in range(6817, 7817, 2):
    try:
        with socket.socket() as a, socket.socket() as b:
            a.bind(("127.0.0.1", port)); b.bind(("127.0.0.1", port + 1))
    except OSError:
        continue
    print(port)
    break
PY
}

show_logs() {
  for log in "$1"/munge/munged.log "$1"/log/slurmctld.log "$1"/log/slurmd.log; do
    [ -f "$log" ] && { echo "== $log" >&2; tail -n 20 "$log" >&2; }
  done
}

up() {
  local dir="$1"
  [ "$(id -u)" -eq 0 ] || cannot "the cluster's slurmd must run as root (it starts jobs as their user)"
  if [ -L "$SYSTEM_CONF" ] && [ ! -e "$SYSTEM_CONF" ]; then
    rm "$SYSTEM_CONF"  # the link of an earlier test cluster whose directory is gone
  fi
  [ -e "$SYSTEM_CONF" ] && cannot "$SYSTEM_CONF exists (this machine has a SLURM of its own, or another" \
    "test cluster is up: $(readlink "$SYSTEM_CONF" || true))"
  [ -z "$(ls -A "$dir" 2>/dev/null)" ] || die "$dir is not empty; give a new directory"
  # munged wants its socket directory reachable by all and its key readable by it alone.
  mkdir -p "$dir"/munge "$dir"/key "$dir"/state "$dir"/spool "$dir"/log
  dir="$(cd "$dir" && pwd)"
  chmod 755 "$dir" "$dir"/munge
  chmod 700 "$dir"/key
  [ ${#dir} -lt 80 ] || die "$dir is too long for munge's socket path (108 bytes at most)"
  dd if=/dev/urandom of="$dir"/key/munge.key bs=1024 count=1 status=none
  chmod 400 "$dir"/key/munge.key

  # slurmd -C reports this machine's CPUs and memory; slurmd refuses a node bigger than the machine.
  local hardware cpus memory port
  hardware="$(slurmd -C | head -n 1)"
  cpus="$(sed -n 's/.* CPUs=\([0-9]*\).*/\1/p' <<<"$hardware")"
  memory="$(sed -n 's/.* RealMemory=\([0-9]*\).*/\1/p' <<<"$hardware")"
  port="$(free_port)"
  [ -n "$cpus" ] && [ -n "$memory" ] && [ -n "$port" ] || die "cannot size the node from: $hardware"
  sed -e "s|@DIR@|$dir|g" -e "s|@CPUS@|$cpus|g" -e "s|@MEMORY_MB@|$memory|g" -e "s|@USER@|$(id -un)|g" \
      -e "s|@CTLD_PORT@|$port|g" -e "s|@SLURMD_PORT@|$((port + 1))|g" "$HERE"/slurm.conf.in >"$dir"/slurm.conf
  export SLURM_CONF="$dir"/slurm.conf
  mkdir -p "$(dirname "$SYSTEM_CONF")"
  ln -s "$SLURM_CONF" "$SYSTEM_CONF"

  munged --socket="$dir"/munge/munge.socket --key-file="$dir"/key/munge.key \
         --log-file="$dir"/munge/munged.log --pid-file="$dir"/munge/munged.pid \
         --seed-file="$dir"/munge/munged.seed || { show_logs "$dir"; die "munged did not start"; }
  slurmctld -f "$SLURM_CONF" || { show_logs "$dir"; die "slurmctld did not start"; }
  slurmd -f "$SLURM_CONF" -N localhost || { show_logs "$dir"; die "slurmd did not start"; }

  # Ready when the node has registered and is idle.
  local state=""
  for _ in $(seq 60); do
    state="$(sinfo --noheader --nodes=localhost --format=%T 2>/dev/null || true)"
    [ "$state" = idle ] && { echo "SLURM_CONF=$SLURM_CONF"; return; }
    sleep 0.5
  done
  show_logs "$dir"
  die "the node did not become idle (state: '${state}')"
}

stop() {  # stop the daemon whose pid file is $1: TERM, then KILL after 10 s
  local pidfile="$1" pid
  [ -f "$pidfile" ] || return 0
  pid="$(cat "$pidfile")"
  kill -TERM "$pid" 2>/dev/null || return 0
  for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
}

down() {
  local dir
  dir="$(cd "$1" && pwd)" || die "no cluster in $1"
  export SLURM_CONF="$dir"/slurm.conf
  if [ -f "$dir"/slurmctld.pid ] && kill -0 "$(cat "$dir"/slurmctld.pid)" 2>/dev/null; then
    # Jobs still running (an interrupted test) are cancelled, so no job step outlives its slurmd.
    scancel --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 50); do
      [ -z "$(squeue --noheader --states=running,completing --format=%i 2>/dev/null)" ] && break
      sleep 0.2
    done
  fi
  stop "$dir"/slurmd.pid
  stop "$dir"/slurmctld.pid
  stop "$dir"/munge/munged.pid
  if [ "$(readlink "$SYSTEM_CONF" || true)" = "$SLURM_CONF" ]; then rm "$SYSTEM_CONF"; fi
}

case "${1:-}" in
  install) install ;;
  up) [ $# -eq 2 ] || die "usage: $0 up DIR"; up "$2" ;;
  down) [ $# -eq 2 ] || die "usage: $0 down DIR"; down "$2" ;;
  *) die "usage: $0 install | up DIR | down DIR" ;;
esac
