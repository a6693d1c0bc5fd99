#!/bin/sh
# The lab's "reboot": what a bootloader does at power-on, on the file bootloader.sh keeps. Prints
# the slot that boots: the first in the order that is good, or on trial with an attempt left (the
# attempt is used up now, so a trial slot that is not marked good boots once only).
set -eu
state="$RAUC_LAB_DIR/boot-state"
. "$state"
for slot in $order; do
  eval "s=\$${slot}_state a=\$${slot}_attempts"
  if [ "$s" = good ]; then echo "$slot"; exit 0; fi
  if [ "$s" = trial ] && [ "$a" -gt 0 ]; then
    eval "${slot}_attempts=$((a - 1))"
    printf 'order="%s"\nA_state=%s\nA_attempts=%s\nB_state=%s\nB_attempts=%s\n' "$order" "$A_state" "$A_attempts" "$B_state" "$B_attempts" > "$state.tmp"
    mv "$state.tmp" "$state"
    echo "$slot"; exit 0
  fi
done
echo "no bootable slot" >&2; exit 1
