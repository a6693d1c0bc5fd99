// Types of build-service.mjs (plain JavaScript), for the tests that build the service.
import type { BuildState } from "./build-state.mjs";
export const SERVICE_ENTRY: string;
export function serviceBuildState(outdir?: string): BuildState;
export function buildService(outdir?: string): Promise<number>;
export function ensureServiceBuild(say?: (line: string) => void, outdir?: string): Promise<void>;
