// The child's side of bench/support/child.ts `command`: each line on stdin is handed to
// `handle`, and what it answers is printed as `DONE {json}` (a failure as `DONE {"error": ...}`),
// so that the benchmark's process can ask a helper process for its figures.
export function answerCommands(handle: (line: string) => Promise<object> | object): void {
  process.stdin.setEncoding("utf8");
  let pending = "";
  process.stdin.on("data", (chunk: string) => {
    pending += chunk;
    for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
      const line = pending.slice(0, nl).trim();
      pending = pending.slice(nl + 1);
      void Promise.resolve()
        .then(() => handle(line))
        .then(
          (answer) => process.stdout.write(`DONE ${JSON.stringify(answer)}\n`),
          (err: Error) => process.stdout.write(`DONE ${JSON.stringify({ error: err.message.slice(0, 300) })}\n`),
        );
    }
  });
  process.stdin.on("end", () => undefined);
}
