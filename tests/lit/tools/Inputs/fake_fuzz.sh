#!/usr/bin/env bash
# A stand-in for tilec_fuzz in the test of tools/fuzz/device-campaign.sh (fuzz_campaign.test): it takes
# libFuzzer's arguments, adds one unit named by its -seed to the first corpus folder (the shared one), then
# either fails at once with a crash file (FAKE_CRASH=NAME, once per NAME) or runs out -max_total_time, and
# prints libFuzzer's final statistics line (10 executions when it failed, 1000 otherwise).
secs=0 seed=0 art=
dirs=()
for a in "$@"; do
  case $a in
  -max_total_time=*) secs=${a#*=} ;;
  -seed=*) seed=${a#*=} ;;
  -artifact_prefix=*) art=${a#*=} ;;
  -*) ;;
  *) dirs+=("$a") ;;
  esac
done
echo "unit $seed" >"${dirs[0]}/unit-$seed"
if [ -n "${FAKE_CRASH:-}" ] && [ ! -e "${art}crash-$FAKE_CRASH" ]; then
  echo "planted" >"${art}crash-$FAKE_CRASH"
  echo "stat::number_of_executed_units: 10"
  exit 1
fi
sleep "$secs"
echo "stat::number_of_executed_units: 1000"
