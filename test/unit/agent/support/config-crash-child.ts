// A child process for the configuration crash tests (test/unit/agent/config-files.test.ts):
// applies a revision with the agent's own FileSet, says each step on stdout, and at step
// CRASH_AT stops there (blocked, not exiting) until the test kills it with SIGKILL. FAIL_AT
// makes that step fail instead (a write the machine refuses), which starts the rollback.
import fs from "node:fs";
import { FileSet, type DesiredFile } from "../../../../agent/src/config/file-set.js";

interface Spec {
  stateDir: string;
  roots: string[];
  revision: string;
  files: Array<Omit<DesiredFile, "content"> & { content: string }>;
  crashAt: number;
  failAt?: number;
}

const spec = JSON.parse(fs.readFileSync(process.argv[2], "utf8")) as Spec;
let count = 0;
const files = new FileSet({
  stateDir: spec.stateDir,
  roots: spec.roots,
  onStep: (step) => {
    count++;
    process.stdout.write(`${count} ${step}\n`);
    if (count === spec.failAt) throw new Error(`refused at ${step}`);
    if (count === spec.crashAt) {
      process.stdout.write("waiting to be killed\n");
      // blocks this thread for good: the write stands half done until the SIGKILL
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0);
    }
  },
});
try {
  files.apply(spec.revision, spec.files.map((f) => ({ ...f, content: Buffer.from(f.content) })));
  process.stdout.write("done\n");
} catch (error) {
  process.stdout.write(`failed: ${(error as Error).message}\n`);
}
