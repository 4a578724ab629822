#!/usr/bin/env bash
# Fault script for the recorder and `lockstep bag reindex`: kill -9 at seeded random moments, a full disk,
# truncated and random files. Prints a table of outcomes; exits non-zero on any crash, hang or data loss.
# Bounded: every step runs under `timeout`; the whole script takes about a minute.
#
#   bash scripts/faults.sh            # after `cargo build -p lockstep_cli -p lockstep_recorder_node --bins`
#   FAULTS_RUN=3 bash scripts/faults.sh   # other random moments (default 11; the same number, the same run)
#
# The full disk is a 2 MB tmpfs when `mount` works (root); otherwise the recorder runs under `ulimit -f`
# (a file-size limit: writes fail with "File too large", which the recorder handles like a full disk).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
# shellcheck source=env-local.sh
source scripts/env-local.sh
BIN=${LOCKSTEP_BIN:-$PWD/target/debug/lockstep}
LOADGEN=${LOCKSTEP_LOADGEN:-$PWD/target/debug/lockstep_loadgen}
SEED=${FAULTS_RUN:-11}
RANDOM=$SEED
export ROS_DOMAIN_ID=${FAULTS_DOMAIN_ID:-$((150 + SEED % 80))}
for b in "$BIN" "$LOADGEN"; do
    [[ -x $b ]] || { echo "faults.sh: $b is missing: cargo build -p lockstep_cli -p lockstep_recorder_node --bins" >&2; exit 2; }
done
WORK=$(mktemp -d /tmp/lockstep-faults.XXXXXX)
MNT=""
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
    [[ -n $MNT ]] && umount "$MNT" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

ROWS=()
BAD=0
# row CASE OUTCOME OK(0/1) DETAIL
row() {
    local verdict=ok
    if [[ $3 != 0 ]]; then verdict=FAIL; BAD=$((BAD + 1)); fi
    ROWS+=("$(printf '| %-34s | %-22s | %-4s | %s' "$1" "$2" "$verdict" "$4")")
}
# What an exit status means: 124 = hang (timeout), >= 128 = killed by a signal (crash).
kind() { if (( $1 == 124 )); then echo hang; elif (( $1 >= 128 )); then echo "crash($1)"; elif (( $1 == 0 )); then echo ok; else echo "error($1)"; fi; }
messages_of_reindex() { sed -n 's/^wrote .* (\([0-9]*\) messages)$/\1/p' "$1" | tail -1; }
messages_of_info() { sed -n 's/^Messages: *\([0-9]*\)$/\1/p' "$1" | tail -1; }

start_load() {  # topic rate size
    "$LOADGEN" --ros-args -p topic:="$1" -p rate_hz:="$2" -p size_bytes:="$3" -p count:=100000000 \
        -p wait_for_subscriber_secs:=30.0 >"$WORK/load.log" 2>&1 &
    PIDS+=($!)
    LOAD_PID=$!
}

# 1. kill -9 of a recording at random moments, then reindex and info.
for round in 1 2 3; do
    bag=$WORK/kill$round
    start_load /fault_load 400.0 2000
    "$BIN" bag record -q -o "$bag" /fault_load >"$WORK/rec$round.log" 2>&1 &
    rec=$!
    PIDS+=($rec)
    # Wait for the bag to exist, then a seeded 0.5 .. 3.5 s more.
    for _ in $(seq 100); do [[ -e $bag ]] && break; sleep 0.1; done
    delay="$((RANDOM % 3)).$((RANDOM % 10))"
    sleep "$delay"
    kill -9 "$rec" 2>/dev/null; wait "$rec" 2>/dev/null
    kill -9 "$LOAD_PID" 2>/dev/null; wait "$LOAD_PID" 2>/dev/null
    timeout 60 "$BIN" bag reindex "$bag" >"$WORK/re$round.out" 2>"$WORK/re$round.err"; rc=$?
    n=$(messages_of_reindex "$WORK/re$round.out")
    timeout 60 "$BIN" bag info "$bag.reindexed" >"$WORK/info$round.out" 2>&1; irc=$?
    m=$(messages_of_info "$WORK/info$round.out")
    ok=1; [[ $rc == 0 && $irc == 0 && -n $n && "$n" == "$m" ]] && ok=0
    row "kill -9 after ${delay} s, reindex" "$(kind $rc)/info $(kind $irc)" $ok "salvaged ${n:-?}, info reads ${m:-?}"
done

# 2. A full disk under the recorder.
disk=$WORK/disk
mkdir -p "$disk"
limit=""
if mount -t tmpfs -o size=2m tmpfs "$disk" 2>/dev/null; then
    MNT=$disk; how="2 MB tmpfs"
else
    limit="ulimit -f 2048;"; how="ulimit -f 2048 (2 MB file limit)"
fi
bag=$disk/full
start_load /fault_load 500.0 4000
bash -c "$limit trap '' XFSZ; exec \"$BIN\" bag record -q -o \"$bag\" /fault_load" >"$WORK/full.out" 2>"$WORK/full.err" &
rec=$!
PIDS+=($rec)
# Until the disk is full (or 40 s), then Ctrl-C.
for _ in $(seq 400); do
    used=$(du -sk "$disk" 2>/dev/null | cut -f1)
    (( ${used:-0} >= 1900 )) && break
    sleep 0.1
done
sleep 1
kill -INT "$rec" 2>/dev/null
timeout 30 tail --pid="$rec" -f /dev/null; wait "$rec"; rc=$?
kill -9 "$LOAD_PID" 2>/dev/null; wait "$LOAD_PID" 2>/dev/null
reported=$(sed -n 's/.* topics, \([0-9]*\) messages,.*/\1/p' "$WORK/full.out" | tail -1)
errors=$(grep -c "\[ERROR\].*recording stopped" "$WORK/full.err")
leftovers=$(find "$bag" -name '*tmp*' | wc -l)
timeout 60 "$BIN" bag reindex "$bag" -o "$WORK/full.reindexed" >"$WORK/full.re" 2>&1; rrc=$?
inbag=$(messages_of_reindex "$WORK/full.re")
ok=1; [[ $rc == 1 && $errors == 1 && $rrc == 0 && -n $reported && "$reported" == "$inbag" && $leftovers == 0 ]] && ok=0
row "full disk ($how)" "exit $rc, $errors error log line" $ok "reported $reported, in the bag $inbag, temp files $leftovers"
[[ -n $MNT ]] && { umount "$MNT"; MNT=""; }

# 3. Truncated files: a finished recording cut at every 10 %, and random bytes.
bag=$WORK/whole
start_load /fault_load 400.0 1000
"$BIN" bag record -q -o "$bag" /fault_load >"$WORK/whole.out" 2>&1 &
rec=$!
PIDS+=($rec)
for _ in $(seq 100); do [[ -e $bag ]] && break; sleep 0.1; done
sleep 2
kill -INT "$rec"; timeout 30 tail --pid="$rec" -f /dev/null; wait "$rec"
kill -9 "$LOAD_PID" 2>/dev/null; wait "$LOAD_PID" 2>/dev/null
file=$(find "$bag" -name '*.mcap' | head -1)
size=$(stat -c %s "$file")
prev=0
for tenth in 1 2 3 4 5 6 7 8 9; do
    cut=$WORK/cut$tenth
    mkdir -p "$cut"
    head -c $((size * tenth / 10)) "$file" >"$cut/cut${tenth}_0.mcap"
    timeout 60 "$BIN" bag reindex "$cut" >"$WORK/cut$tenth.out" 2>&1; rc=$?
    n=$(messages_of_reindex "$WORK/cut$tenth.out")
    timeout 60 "$BIN" bag info "$cut.reindexed" >/dev/null 2>&1; irc=$?
    ok=1; [[ $rc == 0 && $irc == 0 && -n $n ]] && (( n >= prev )) && ok=0
    row "cut at ${tenth}0 %" "$(kind $rc)/info $(kind $irc)" $ok "salvaged ${n:-?} (previous cut $prev)"
    prev=${n:-0}
done
junk=$WORK/junk
mkdir -p "$junk"
python3 -c "import random, sys; random.seed($SEED); sys.stdout.buffer.write(random.randbytes(65536))" >"$junk/junk_0.mcap"
cp "$junk/junk_0.mcap" "$WORK/junk.copy"
timeout 60 "$BIN" bag reindex --in-place "$junk" >"$WORK/junk.out" 2>"$WORK/junk.err"; rc=$?
ok=1; [[ $rc == 1 ]] && cmp -s "$junk/junk_0.mcap" "$WORK/junk.copy" && [[ ! -e $junk/metadata.yaml ]] && ok=0
row "random bytes, --in-place" "$(kind $rc)" $ok "$(head -c 90 "$WORK/junk.err")"

echo "| case                               | outcome                | ok   | detail"
echo "|------------------------------------|------------------------|------|-------"
printf '%s\n' "${ROWS[@]}"
echo "run $SEED: $BAD failed of ${#ROWS[@]}"
(( BAD == 0 ))
