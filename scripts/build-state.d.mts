// Types of build-state.mjs (plain JavaScript, for src/lib/console-build.ts).
export type BuildState = "missing" | "stale" | "fresh";
export function buildState(output: string, inputs: readonly string[]): BuildState;
