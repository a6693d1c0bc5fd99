// A child process for the configuration tests (test/unit/agent/config-agent.test.ts): the
// agent's ConfigurationAgent applying one answer in its own state directory, as `fleet-agent
// run` would; the test kills it with SIGKILL while the revision's activation runs.
import fs from "node:fs";
import { ConfigurationAgent } from "../../../../agent/src/config/configuration.js";
import type { ConfigurationAnswer } from "../../../../agent/src/config/types.js";
import { StateDir } from "../../../../agent/src/state-dir.js";

const spec = JSON.parse(fs.readFileSync(process.argv[2], "utf8")) as { stateDir: string; roots: string[]; answer: ConfigurationAnswer };
const state = new StateDir(spec.stateDir);
const agent = new ConfigurationAgent({
  state, settings: { roots: spec.roots, driftIntervalMs: 300_000, activationTimeoutMs: 300_000 },
  log: (level, message) => process.stdout.write(`${level}: ${message}\n`), wake: () => undefined,
});
agent.start();
agent.apply(spec.answer);
await agent.idle();
process.stdout.write("done\n");
