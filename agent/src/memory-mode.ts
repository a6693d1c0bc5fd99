// The agent favours memory over speed: V8's --optimize-for-size, set before anything else is
// loaded (cli.ts imports this module first). A device runs the agent beside its workloads,
// and the agent spends 0.02 % of a core idle, so the extra garbage-collection CPU costs
// nothing that matters, while the heap V8 keeps in reserve shrinks (docs/benchmarks.md, "The
// fleet agent on Podman"). Set from inside because a flag on the command line would need every
// way the agent is started (systemd unit, npx, a shebang) to pass it, and NODE_OPTIONS does not
// accept it.
import v8 from "node:v8";

v8.setFlagsFromString("--optimize-for-size");
