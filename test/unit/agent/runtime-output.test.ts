// Reading the engines' output (agent/src/runtime/cli-output.ts, exec.ts): log lines and their
// times, health and exit codes in status lines, and the engine's message out of its stderr.
import { describe, expect, it } from "vitest";
import { exitCodeFromStatus, healthFromStatus, mergeLogStreams, normalizeTimestamp } from "../../../agent/src/runtime/cli-output.js";
import { engineMessage, goDuration } from "../../../agent/src/runtime/exec.js";

describe("container logs", () => {
  it("writes every time as UTC with nine fraction digits: Go drops trailing zeros and may write an offset", () => {
    expect(normalizeTimestamp("2026-11-27T13:43:05.243955992Z")).toBe("2026-11-27T13:43:05.243955992Z");
    expect(normalizeTimestamp("2026-11-27T13:43:05.1Z")).toBe("2026-11-27T13:43:05.100000000Z");
    expect(normalizeTimestamp("2026-11-27T13:43:05Z")).toBe("2026-11-27T13:43:05.000000000Z");
    expect(normalizeTimestamp("2026-11-27T14:43:05.5+01:00")).toBe("2026-11-27T13:43:05.500000000Z");
    expect(normalizeTimestamp("hello")).toBeNull();
  });

  it("merges both streams in time order, each stream's lines kept in theirs, a line without a time left out", () => {
    const stdout = "2026-11-27T13:43:05.1Z serving\n2026-11-27T13:43:05.1000005Z second line\n2026-11-27T13:43:05.3Z \n";
    const stderr = "2026-11-27T13:43:05.2Z on stderr\nnot a log line\n";
    expect(mergeLogStreams(stdout, stderr)).toEqual([
      { timestamp: "2026-11-27T13:43:05.100000000Z", stream: "stdout", message: "serving" },
      { timestamp: "2026-11-27T13:43:05.100000500Z", stream: "stdout", message: "second line" },
      { timestamp: "2026-11-27T13:43:05.200000000Z", stream: "stderr", message: "on stderr" },
      { timestamp: "2026-11-27T13:43:05.300000000Z", stream: "stdout", message: "" },
    ]);
  });
});

describe("status lines", () => {
  it("reads the health of podman's and docker's status", () => {
    expect(healthFromStatus("Up 5 seconds ago (starting)")).toBe("starting");
    expect(healthFromStatus("Up 2 minutes (health: starting)")).toBe("starting");
    expect(healthFromStatus("Up 2 minutes (healthy)")).toBe("healthy");
    expect(healthFromStatus("Up 2 minutes (unhealthy)")).toBe("unhealthy");
    expect(healthFromStatus("Up 2 minutes")).toBeNull();
  });

  it("reads docker's exit code", () => {
    expect(exitCodeFromStatus("Exited (3) 2 seconds ago")).toBe(3);
    expect(exitCodeFromStatus("Up 2 minutes")).toBeNull();
  });
});

describe("engineMessage", () => {
  it("keeps podman's Error lines, without the noise of a host without systemd", () => {
    const stderr = [
      "failed to connect to syslog: Initialization",
      'time="2026-11-27T13:43:03Z" level=error msg="unable to get systemd connection to add healthchecks: dial unix /run/systemd/private"',
      "Trying to pull 127.0.0.1:5000/demo/nothere:1...",
      "Error: initializing source docker://127.0.0.1:5000/demo/nothere:1: manifest unknown",
    ].join("\n");
    expect(engineMessage(stderr)).toBe("Error: initializing source docker://127.0.0.1:5000/demo/nothere:1: manifest unknown");
  });

  it("makes a Python traceback its last line, and other output its last lines", () => {
    expect(engineMessage('Traceback (most recent call last):\n  File "/usr/bin/podman-compose", line 33\nRuntimeError: missing networks: default\n')).toBe(
      "RuntimeError: missing networks: default",
    );
    expect(engineMessage("one\ntwo\nthree\nfour\n")).toBe("two\nthree\nfour");
  });
});

describe("goDuration", () => {
  it("writes a duration as compose and the manifest do", () => {
    expect(goDuration(300_000)).toBe("5m0s");
    expect(goDuration(2000)).toBe("2s");
    expect(goDuration(3_690_000)).toBe("1h1m30s");
  });
});
