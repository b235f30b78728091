#!/usr/bin/env bash
# A single-node SLURM cluster on this machine, for testing the workflow's
# SLURM profile with real sbatch/squeue/sacct (tests/test_slurm.py):
#
#   scripts/slurm-local.sh up      install (Debian slurmctld, slurmd, munge,
#                                  slurmdbd, MariaDB), configure and start it,
#                                  with an accounting database as most sites
#                                  run; prints the partition
#   scripts/slurm-local.sh up --no-accounting
#                                  the same without slurmdbd: jobs are followed
#                                  with squeue only (finished jobs stay listed
#                                  for MinJobAge seconds)
#   scripts/slurm-local.sh status  sinfo (and the accounts, with accounting)
#   scripts/slurm-local.sh down    cancel its jobs, stop the daemons and its
#                                  database, remove what it wrote
#
# Needs root or sudo. The database is a MariaDB instance of its own (its data
# under $STATE/db, listening on 127.0.0.1 only), never the system's. With
# accounting, the cluster "dtrlab" has an account "dtrlab" holding the user
# who ran this. It refuses to touch a slurm.conf or slurmdbd.conf it did not
# write (a real cluster's).
set -euo pipefail

PARTITION=${DTRLAB_SLURM_PARTITION:-compute}
ACCOUNT=${DTRLAB_SLURM_ACCOUNT:-dtrlab}
CONF=/etc/slurm/slurm.conf
DBD_CONF=/etc/slurm/slurmdbd.conf
MARK="# written by dtrlab scripts/slurm-local.sh"
STATE=/var/lib/dtrlab-slurm
DB=$STATE/db
DB_PORT=${DTRLAB_SLURM_DB_PORT:-33061}
ACCOUNTING=1

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    echo "slurm-local: needs root or sudo" >&2; exit 1
  fi
fi

ours() { [ -f "$CONF" ] && head -1 "$CONF" | grep -qxF "$MARK"; }
ours_dbd() { [ -f "$DBD_CONF" ] && head -1 "$DBD_CONF" | grep -qxF "$MARK"; }

install() {
  local need=()
  local pkgs=(slurmctld slurmd slurm-client munge)
  [ "$ACCOUNTING" = 1 ] && pkgs+=(slurmdbd mariadb-server mariadb-client)
  for p in "${pkgs[@]}"; do
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
  if [ -f "$DBD_CONF" ] && ! ours_dbd; then
    echo "slurm-local: $DBD_CONF exists and was not written by this script; not touching it" >&2
    exit 1
  fi
  local storage="AccountingStorageType=accounting_storage/none" gather="JobAcctGatherType=jobacct_gather/none"
  if [ "$ACCOUNTING" = 1 ]; then
    storage="AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost"
    gather="JobAcctGatherType=jobacct_gather/linux"
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
$storage
JobCompType=jobcomp/none
$gather
# Finished jobs stay visible to squeue (the no-accounting status query) this long.
MinJobAge=900
ReturnToService=2
NodeName=$host CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=$PARTITION Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
  if [ "$ACCOUNTING" = 1 ]; then
    local pass
    pass=$(head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n')
    $SUDO mkdir -p "$DB"
    # slurmdbd reads its password from here: root only.
    $SUDO install -m 0600 /dev/null "$DBD_CONF"
    $SUDO tee "$DBD_CONF" >/dev/null <<EOF
$MARK
AuthType=auth/munge
DbdHost=localhost
SlurmUser=root
LogFile=$STATE/slurmdbd.log
PidFile=/run/dtrlab-slurm/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$pass
StorageLoc=slurm_acct_db
EOF
    $SUDO chmod 0600 "$DBD_CONF"
  fi
}

# The accounting database: a MariaDB instance of our own, on 127.0.0.1.
start_db() {
  local sock=$DB/mysqld.sock pass
  if [ ! -d "$DB/data/mysql" ]; then
    $SUDO mkdir -p "$DB/data"
    $SUDO chown -R mysql:mysql "$DB"
    $SUDO mariadb-install-db --user=mysql --datadir="$DB/data" --auth-root-authentication-method=socket \
      --skip-test-db >"$STATE/mariadb-install.log" 2>&1
  fi
  if ! [ -S "$sock" ]; then
    $SUDO runuser -u mysql -- /usr/sbin/mariadbd --no-defaults --datadir="$DB/data" --socket="$sock" \
      --pid-file="$DB/mariadbd.pid" --port="$DB_PORT" --bind-address=127.0.0.1 \
      --log-error="$STATE/mariadb.log" >/dev/null 2>&1 &
  fi
  for _ in $(seq 60); do
    $SUDO mariadb --socket="$sock" -u root -e "SELECT 1" >/dev/null 2>&1 && break
    sleep 1
  done
  pass=$($SUDO sed -n 's/^StoragePass=//p' "$DBD_CONF")
  $SUDO mariadb --socket="$sock" -u root <<EOF
CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
ALTER USER 'slurm'@'127.0.0.1' IDENTIFIED BY '$pass';
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
EOF
}

# The cluster, an account and its one user, as a site's administrator adds them.
add_associations() {
  local user
  user=$(id -un)
  $SUDO sacctmgr -i add cluster dtrlab >/dev/null 2>&1 || true
  $SUDO sacctmgr -i add account "$ACCOUNT" Cluster=dtrlab Description="dtrlab tests" Organization=dtrlab \
    >/dev/null 2>&1 || true
  $SUDO sacctmgr -i add user "$user" Account="$ACCOUNT" DefaultAccount="$ACCOUNT" Cluster=dtrlab >/dev/null 2>&1 || true
  $SUDO sacctmgr -n -P show assoc user="$user" format=account | grep -qxF "$ACCOUNT" || {
    echo "slurm-local: could not add user $user to account $ACCOUNT; see $STATE/slurmdbd.log" >&2; exit 1; }
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
  if [ "$ACCOUNTING" = 1 ]; then
    start_db
    pgrep -x slurmdbd >/dev/null || $SUDO slurmdbd
    for _ in $(seq 60); do
      $SUDO sacctmgr -n show cluster >/dev/null 2>&1 && break
      sleep 1
    done
    $SUDO sacctmgr -n show cluster >/dev/null 2>&1 || {
      echo "slurm-local: slurmdbd did not come up; see $STATE/slurmdbd.log and $STATE/mariadb.log" >&2; exit 1; }
    add_associations
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
  local daemons=(slurmd slurmctld slurmscriptd slurmdbd munged) dbpid=""
  for d in "${daemons[@]}"; do
    $SUDO pkill -x "$d" 2>/dev/null || true
  done
  # Our database only: the one whose pid file is under $DB.
  [ -f "$DB/mariadbd.pid" ] && dbpid=$($SUDO cat "$DB/mariadbd.pid")
  [ -n "$dbpid" ] && { $SUDO kill "$dbpid" 2>/dev/null || true; }
  # Wait for them to exit (they write their state on the way out).
  for _ in $(seq 30); do
    alive=0
    for d in "${daemons[@]}"; do
      pgrep -x "$d" >/dev/null && alive=1
    done
    [ -n "$dbpid" ] && $SUDO kill -0 "$dbpid" 2>/dev/null && alive=1
    [ "$alive" = 0 ] && break
    sleep 1
  done
  for d in "${daemons[@]}"; do
    $SUDO pkill -9 -x "$d" 2>/dev/null || true
  done
  [ -n "$dbpid" ] && { $SUDO kill -9 "$dbpid" 2>/dev/null || true; }
  if ours_dbd; then $SUDO rm -f "$DBD_CONF"; fi
  $SUDO rm -f "$CONF"
  $SUDO rm -rf "$STATE" /run/dtrlab-slurm
}

case "${1:-}" in
  up)
    case "${2:-}" in
      "") ;;
      --no-accounting) ACCOUNTING=0 ;;
      *) echo "usage: $0 up [--no-accounting]" >&2; exit 2 ;;
    esac
    install; configure; start ;;
  status)
    sinfo
    if ours_dbd; then sacctmgr -n show assoc format=cluster,account,user; fi ;;
  down) stop ;;
  *) echo "usage: $0 up [--no-accounting] | status | down" >&2; exit 2 ;;
esac
