// The pure parts of the remote commands: ssh's `~.` escape, port-forward's LOCAL:[HOST:]REMOTE,
// and cp's DEVICE:/path versus a local path.
import { describe, expect, it } from "vitest";
import { EscapeFilter } from "../../cli/src/remote/escape.js";
import { parseForward } from "../../cli/src/commands/port-forward.js";
import { parseEndpoint } from "../../cli/src/commands/cp.js";

const typed = (filter: EscapeFilter, text: string) => {
  const { forward, leave } = filter.push(Buffer.from(text));
  return { sent: forward.toString(), leave };
};

describe("the ~. escape", () => {
  it("leaves on ~. at the start, after Enter (\\r in raw mode) or a newline, and only there", () => {
    expect(typed(new EscapeFilter(), "~.")).toEqual({ sent: "", leave: true });
    expect(typed(new EscapeFilter(), "ls\r~.")).toEqual({ sent: "ls\r", leave: true });
    expect(typed(new EscapeFilter(), "ls\n~.")).toEqual({ sent: "ls\n", leave: true });
    expect(typed(new EscapeFilter(), "echo a~.")).toEqual({ sent: "echo a~.", leave: false });
  });

  it("sends ~~ as one ~, and a ~ before anything else as it is, also across keystrokes", () => {
    expect(typed(new EscapeFilter(), "~~.")).toEqual({ sent: "~.", leave: false });
    expect(typed(new EscapeFilter(), "~/bin\r")).toEqual({ sent: "~/bin\r", leave: false });
    const filter = new EscapeFilter();
    expect(typed(filter, "\r")).toEqual({ sent: "\r", leave: false });
    expect(typed(filter, "~")).toEqual({ sent: "", leave: false });
    expect(typed(filter, ".")).toEqual({ sent: "", leave: true });
  });
});

describe("port-forward's LOCAL:[HOST:]REMOTE", () => {
  it("defaults the host to the device's loopback, takes a host or [IPv6], and refuses what is not a port", () => {
    expect(parseForward("8080:80")).toEqual({ localPort: 8080, host: "127.0.0.1", remotePort: 80 });
    expect(parseForward("0:10.0.0.5:80")).toEqual({ localPort: 0, host: "10.0.0.5", remotePort: 80 });
    expect(parseForward("9000:[::1]:22")).toEqual({ localPort: 9000, host: "::1", remotePort: 22 });
    expect(() => parseForward("80")).toThrow(/LOCAL:REMOTE or LOCAL:HOST:REMOTE/);
    expect(() => parseForward("8080:70000")).toThrow(/REMOTE must be a port number/);
    expect(() => parseForward("8080:0")).toThrow(/REMOTE must be a port number/);
  });
});

describe("cp's endpoints", () => {
  it("reads DEVICE:/absolute as the device's, anything else as local", () => {
    expect(parseEndpoint("gw-01:/var/log/app.log")).toEqual({ device: "gw-01", path: "/var/log/app.log" });
    expect(parseEndpoint("./a:b")).toEqual({ path: "./a:b" });
    expect(parseEndpoint("/tmp/x")).toEqual({ path: "/tmp/x" });
    expect(parseEndpoint("gw-01:relative")).toEqual({ path: "gw-01:relative" });
  });
});
