#!/bin/sh
# The test's bootloader: RAUC's `custom` backend (system.conf: bootloader=custom,
# bootloader-custom-backend=this file). It keeps what a real bootloader keeps in its environment
# in "$RAUC_LAB_DIR/boot-state": the boot order and, per slot (A, B), a state (good, trial, bad)
# and the attempts a trial slot has left. boot.sh (the lab's "reboot") reads the same file to
# decide which slot boots, and counts an attempt of a trial slot as a bootloader does.
#   get-primary            the first slot in the order that may boot
#   get-state SLOT         good (may boot) or bad
#   set-primary SLOT       SLOT first in the order, on trial with one attempt (RAUC calls it after an install)
#   set-state SLOT good|bad  rauc status mark-good / mark-bad
set -eu
state="$RAUC_LAB_DIR/boot-state"
. "$state"
bootable() {
  eval "s=\$${1}_state a=\$${1}_attempts"
  [ "$s" = good ] || { [ "$s" = trial ] && [ "$a" -gt 0 ]; }
}
save() {
  printf 'order="%s"\nA_state=%s\nA_attempts=%s\nB_state=%s\nB_attempts=%s\n' "$order" "$A_state" "$A_attempts" "$B_state" "$B_attempts" > "$state.tmp"
  mv "$state.tmp" "$state"
}
case "${1:-}" in
  get-primary)
    for slot in $order; do if bootable "$slot"; then echo "$slot"; exit 0; fi; done
    echo "no bootable slot" >&2; exit 1 ;;
  get-state)
    if bootable "$2"; then echo good; else echo bad; fi ;;
  set-primary)
    new="$2"; for slot in $order; do [ "$slot" = "$2" ] || new="$new $slot"; done
    order="$new"; eval "${2}_state=trial ${2}_attempts=1"; save ;;
  set-state)
    eval "${2}_state=$3"; save ;;
  *)
    echo "unknown command: $*" >&2; exit 1 ;;
esac
