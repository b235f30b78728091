#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, for testing the workflow's
# SLURM profile with real sbatch/squeue (tests/test_slurm.py):
#
#   scripts/slurm-local.sh up      install (Debian slurmctld, slurmd, munge),
#                                  configure and start it; prints the partition
#   scripts/slurm-local.sh status  sinfo
#   scripts/slurm-local.sh down    cancel its jobs, stop the daemons, remove
#                                  the configuration it wrote
#
# Needs root or sudo. No accounting database: the executor plugin tracks jobs
# with squeue, so finished jobs stay listed for MinJobAge seconds. It refuses
# to touch a slurm.conf it did not write (a real cluster's).
set -euo pipefail

PARTITION=${DTRLAB_SLURM_PARTITION:-compute}
CONF=/etc/slurm/slurm.conf
MARK="# written by dtrlab scripts/slurm-local.sh"
STATE=/var/lib/dtrlab-slurm

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "slurm-local: needs root or sudo" >&2; exit 1
  fi
fi

ours() { [ -f "$CONF" ] && head -1 "$CONF" | grep -qxF "$MARK"; }

install() {
  local need=()
  for p in slurmctld slurmd slurm-client munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || need+=("$p")
  done
  if [ ${#need[@]} -gt 0 ]; then
    echo "slurm-local: installing ${need[*]}" >&2
    $SUDO apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
  fi
}

configure() {
  if [ -f "$CONF" ] && ! ours; then
    echo "slurm-local: $CONF exists and was not written by this script; not touching it" >&2
    exit 1
  fi
  local host cpus mem
  host=$(hostname -s)
  cpus=$(nproc)
  # Leave 1 GiB to the system.
  mem=$(( $(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
  $SUDO mkdir -p /etc/slurm "$STATE/ctld" "$STATE/d" /run/dtrlab-slurm
  $SUDO tee "$CONF" >/dev/null <<EOF
$MARK
ClusterName=dtrlab
SlurmctldHost=$host
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=/run/dtrlab-slurm/slurmctld.pid
SlurmdPidFile=/run/dtrlab-slurm/slurmd.pid
SlurmctldLogFile=$STATE/slurmctld.log
SlurmdLogFile=$STATE/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
JobAcctGatherType=jobacct_gather/none
# Finished jobs stay visible to squeue (the plugin's status query) this long.
MinJobAge=900
ReturnToService=2
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=$PARTITION Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

start() {
  if ! pgrep -x munged >/dev/null; then
    if [ ! -s /etc/munge/munge.key ]; then
      $SUDO mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null \
        || $SUDO dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
      $SUDO chown munge:munge /etc/munge/munge.key
      $SUDO chmod 0400 /etc/munge/munge.key
    fi
    $SUDO mkdir -p /run/munge && $SUDO chown munge:munge /run/munge
    $SUDO runuser -u munge -- /usr/sbin/munged
  fi
  pgrep -x slurmctld >/dev/null || $SUDO slurmctld
  pgrep -x slurmd >/dev/null || $SUDO slurmd
  for _ in $(seq 60); do
    if sinfo -h -p "$PARTITION" -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
      echo "$PARTITION"
      return 0
    fi
    sleep 1
  done
  echo "slurm-local: the node did not come up; see $STATE/slurmctld.log and $STATE/slurmd.log" >&2
  sinfo >&2 || true
  exit 1
}

stop() {
  if ! ours; then
    echo "slurm-local: no cluster of this script to stop" >&2
    return 0
  fi
  scancel --full --user="$(id -un)" 2>/dev/null || true
  $SUDO scontrol shutdown 2>/dev/null || true
  for d in slurmd slurmctld slurmscriptd munged; do
    $SUDO pkill -x "$d" 2>/dev/null || true
  done
  # Wait for them to exit (they write their state on the way out).
  for _ in $(seq 30); do
    alive=0
    for d in slurmd slurmctld slurmscriptd munged; do
      pgrep -x "$d" >/dev/null && alive=1
    done
    [ "$alive" = 0 ] && break
    sleep 1
  done
  for d in slurmd slurmctld slurmscriptd munged; do
    $SUDO pkill -9 -x "$d" 2>/dev/null || true
  done
  $SUDO rm -f "$CONF"
  $SUDO rm -rf "$STATE" /run/dtrlab-slurm
}

case "${1:-}" in
  up) install; configure; start ;;
  status) sinfo ;;
  down) stop ;;
  *) echo "usage: $0 up|status|down" >&2; exit 2 ;;
esac
