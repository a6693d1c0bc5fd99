#!/bin/sh
# RAUC's pre-install handler in the lab: while "$RAUC_LAB_DIR/install-gate" exists, an install
# stops here (it says so in install-gate.reached) until the test removes the gate, so a test can
# kill the agent while RAUC is in the middle of an install. Without the gate it does nothing.
gate="$RAUC_LAB_DIR/install-gate"
[ -e "$gate" ] || exit 0
echo "$RAUC_BUNDLE_MOUNT_POINT" > "$gate.reached"
while [ -e "$gate" ]; do sleep 0.1; done
exit 0
