#!/usr/bin/env bash
# A real single-node Slurm cluster on this machine, for the Slurm tests and for trying the cluster
# commands locally (Debian's slurm-wlm 22.05 + munge; needs root).
#
#   scripts/slurm-local.sh start    # installs the packages if missing, starts munged, slurmctld, slurmd;
#                                   # waits until the node is idle; prints `export SLURM_CONF=...`
#   scripts/slurm-local.sh status   # sinfo/squeue of the running cluster (exit 1 if none)
#   scripts/slurm-local.sh stop     # stops the daemons it started (by their PIDs) and removes its dir
#
# State lives in $SLURM_LOCAL_DIR (default /tmp/scaling-lab-slurm): slurm.conf, state/spool dirs, logs,
# PID files. Every client (sbatch, squeue, scancel) needs SLURM_CONF=$SLURM_LOCAL_DIR/slurm.conf.
set -euo pipefail

DIR="${SLURM_LOCAL_DIR:-/tmp/scaling-lab-slurm}"
CONF="$DIR/slurm.conf"

log() { echo "slurm-local: $*" >&2; }

need_root() {
    if [ "$(id -u)" != 0 ]; then
        log "must run as root (slurmd, munged and apt-get need it)"
        exit 2
    fi
}

install_packages() {
    if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v munged >/dev/null \
        && command -v sbatch >/dev/null; then
        return 0
    fi
    command -v apt-get >/dev/null || { log "slurm-wlm/munge are missing and there is no apt-get"; exit 3; }
    log "installing slurm-wlm and munge with apt-get"
    if ! { apt-get update -q >&2 && DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >&2; }; then
        log "cannot install slurm-wlm/munge"
        exit 3
    fi
}

pid_alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_munge() {
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        return 0 # a munged is already serving this machine
    fi
    if [ ! -s /etc/munge/munge.key ]; then
        (command -v mungekey >/dev/null && mungekey -c -f) || \
            (dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null)
        chown munge: /etc/munge/munge.key 2>/dev/null || true
        chmod 400 /etc/munge/munge.key
    fi
    mkdir -p /run/munge /var/log/munge /var/lib/munge
    chown munge: /run/munge /var/log/munge /var/lib/munge 2>/dev/null || true
    runuser -u munge -- /usr/sbin/munged
    for _ in $(seq 50); do
        munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && break
        sleep 0.1
    done
    # we started it: remember its PID (written by munged as the munge user) so that stop ends it
    [ -f /run/munge/munged.pid ] && cp /run/munge/munged.pid "$DIR/munged.pid"
    munge -n | unmunge >/dev/null || { log "munged does not answer"; exit 4; }
}

write_conf() {
    local h cpus mem
    h=$(hostname -s)
    cpus=$(nproc)
    mem=$(awk '/MemTotal/ {printf "%d", $2/1024*0.8}' /proc/meminfo)
    mkdir -p "$DIR/state" "$DIR/spool" "$DIR/log"
    cat > "$CONF" <<CONF
ClusterName=scalinglab
SlurmctldHost=$h
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool
SlurmctldPidFile=$DIR/ctld.pid
SlurmdPidFile=$DIR/d.pid
SlurmctldLogFile=$DIR/log/ctld.log
SlurmdLogFile=$DIR/log/d.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
ReturnToService=2
MpiDefault=none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.log
NodeName=$h CPUs=$cpus RealMemory=$mem State=UNKNOWN
PartitionName=debug Nodes=$h Default=YES MaxTime=INFINITE State=UP
CONF
}

cmd_start() {
    need_root
    install_packages
    mkdir -p "$DIR"
    export SLURM_CONF="$CONF"
    if pid_alive "$DIR/ctld.pid" && pid_alive "$DIR/d.pid"; then
        log "already running"
    else
        write_conf
        start_munge
        pid_alive "$DIR/ctld.pid" || slurmctld -f "$CONF" -i
        for _ in $(seq 50); do scontrol ping >/dev/null 2>&1 && break; sleep 0.2; done
        pid_alive "$DIR/d.pid" || slurmd -f "$CONF"
    fi
    local h
    h=$(hostname -s)
    for _ in $(seq 150); do
        state=$(sinfo -h -n "$h" -o %t 2>/dev/null | head -1 || true)
        case "$state" in
            idle|mix|alloc) break ;;
            down*|drain*) scontrol update NodeName="$h" State=RESUME >/dev/null 2>&1 || true ;;
        esac
        sleep 0.2
    done
    state=$(sinfo -h -n "$h" -o %t 2>/dev/null | head -1 || true)
    if [ "$state" != idle ] && [ "$state" != mix ] && [ "$state" != alloc ]; then
        log "the node did not become idle (state '$state'); see $DIR/log/"
        exit 5
    fi
    log "cluster up: node $h idle ($(nproc) CPUs); config $CONF"
    echo "export SLURM_CONF=$CONF"
}

cmd_status() {
    export SLURM_CONF="$CONF"
    if ! { pid_alive "$DIR/ctld.pid" && pid_alive "$DIR/d.pid"; }; then
        echo "not running"
        exit 1
    fi
    sinfo
    squeue
}

stop_pidfile() {
    local f=$1
    if pid_alive "$f"; then
        local p
        p=$(cat "$f")
        kill "$p" 2>/dev/null || true
        for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || return 0; sleep 0.1; done
        kill -9 "$p" 2>/dev/null || true
    fi
}

cmd_stop() {
    export SLURM_CONF="$CONF"
    [ -d "$DIR" ] || { log "not running"; return 0; }
    scancel --user="$(id -un)" >/dev/null 2>&1 || true
    stop_pidfile "$DIR/d.pid"
    stop_pidfile "$DIR/ctld.pid"
    stop_pidfile "$DIR/munged.pid"
    rm -rf "$DIR"
    log "stopped"
}

case "${1:-}" in
    start) cmd_start ;;
    stop) cmd_stop ;;
    status) cmd_status ;;
    *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
