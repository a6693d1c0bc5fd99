// Output into a pipe whose reader is gone. `npm start | tee log` stopped by Ctrl-C: the terminal
// signals the whole pipeline, so tee is gone before the service writes its "shutting down"
// line, and that write fails with EPIPE. It must neither keep the service alive (pino's exit
// flush used to retry it forever, and no signal but SIGKILL ended the process) nor end it with
// a stack trace: the stop is the graceful one, exit 0. And `fleet --help | head`: the CLI whose
// reader is gone ends quietly, as a Unix tool killed by SIGPIPE does (141), without a trace.
//
// The pipes are real ones (a FIFO made by mkfifo), as a shell makes them: node's own "pipe"
// for a child's stdio is a socket pair. The SIGINT comes right after "ready": the service
// handles stop signals from before it says so (it died of this SIGINT when it said it first).
import { execFileSync, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { SHARED_KEYS } from "../scale-out/processes.js";
import { ROOT, spawnService, START_COMMAND, type ServerProcess } from "../../support/server-process.js";

const work = fs.mkdtempSync(path.join(os.tmpdir(), "fleet-closed-pipe-"));
const services: ServerProcess[] = [];
afterAll(async () => {
  // (a service that hung is still there when its test timed out)
  for (const service of services) await service.kill();
  fs.rmSync(work, { recursive: true, force: true });
});

let fifos = 0;
/** A new FIFO: a real pipe that processes open by its name. */
function fifo(): string {
  const file = path.join(work, `pipe-${++fifos}`);
  execFileSync("mkfifo", [file]);
  return file;
}

/** Lines that only an uncaught error prints (Node's report of it and its stack). */
const TRACE = /EPIPE|Unhandled 'error' event|^\s+at /;

describe("output into a pipe whose reader is gone", () => {
  for (const stderrToo of [false, true]) {
    it(`npm start ${stderrToo ? "2>&1 " : ""}| cat: cat killed, then SIGINT: the service stops gracefully, exit 0${stderrToo ? "" : ", no stack trace on stderr"}`, async () => {
      const pipe = fifo();
      // the reader (as tee): its output is what the test reads the service's lines from
      const reader = spawn("cat", [pipe], { stdio: ["ignore", "pipe", "ignore"] });
      const readerGone = new Promise((resolve) => reader.once("exit", resolve));
      const writeEnd = await fs.promises.open(pipe, "w"); // opens once cat has opened its end
      const service = await spawnService(`closed-pipe${stderrToo ? "-2" : ""}`, { NODE_ENV: "test", ...SHARED_KEYS }, {
        database: "migrated",
        command: START_COMMAND,
        stdout: { fd: writeEnd.fd, lines: reader.stdout, stderrToo },
      });
      services.push(service);
      if (!stderrToo) {
        // npm start on a tree unchanged since its build (the suite's global setup built it): no
        // second build (its line would come on stderr)
        expect(service.output.filter((line) => line.includes("building the service first"))).toEqual([]);
      }
      await writeEnd.close(); // the service holds its own copy
      reader.kill("SIGKILL");
      await readerGone;
      const written = service.output.length;
      service.child.kill("SIGINT");
      // (a hang here is the failure: the test's timeout ends it)
      const code = await service.exited;
      expect({ code, signal: service.child.signalCode }).toEqual({ code: 0, signal: null });
      // what came after the reader died came on stderr (with 2>&1 nothing can come)
      expect(service.output.slice(written).filter((line) => TRACE.test(line))).toEqual([]);
    }, 120_000);
  }

  it("fleet --help into a pipe whose reader has exited: exit 141 at once, nothing on stderr", async () => {
    const pipe = fifo();
    // The reading end is opened (so that the write end can be) and closed again before the
    // CLI starts: every write of the CLI finds the reader gone, as `| head` that has exited.
    const readEnd = fs.openSync(pipe, fs.constants.O_RDONLY | fs.constants.O_NONBLOCK);
    const writeEnd = fs.openSync(pipe, fs.constants.O_WRONLY);
    fs.closeSync(readEnd);
    const fleet = spawn(process.execPath, [path.join(ROOT, "cli", "bin", "fleet.js"), "--help"], { stdio: ["ignore", writeEnd, "pipe"] });
    fs.closeSync(writeEnd);
    let stderr = "";
    fleet.stderr!.setEncoding("utf8").on("data", (chunk: string) => (stderr += chunk));
    const [code, signal] = await new Promise<[number | null, NodeJS.Signals | null]>((resolve) => fleet.once("exit", (c, s) => resolve([c, s])));
    expect({ code, signal, stderr }).toEqual({ code: 141, signal: null, stderr: "" });
  }, 60_000);
});
