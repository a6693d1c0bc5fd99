// Libraries only some features use, loaded on first use instead of at start: a service that
// never needs them does not hold them (docs/benchmarks.md, "What the embedded default holds").

/** `load` run once, on the first call; every call answers the same promise. */
export function onFirstUse<T>(load: () => Promise<T>): () => Promise<T> {
  let loading: Promise<T> | undefined;
  return () => (loading ??= load());
}

/** isomorphic-git (~2 MB of heap): only Git registries and configuration sources fetch or read a repository. */
export const isomorphicGit = onFirstUse(() => import("isomorphic-git"));
