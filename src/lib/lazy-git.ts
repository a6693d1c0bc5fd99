// isomorphic-git, loaded on first use: only Git registries and configuration sources fetch or
// read a repository, and a service that has none need not hold the library (~2 MB of heap;
// docs/benchmarks.md, "What the embedded default holds").
type IsomorphicGit = typeof import("isomorphic-git");

let loading: Promise<IsomorphicGit> | undefined;

export function isomorphicGit(): Promise<IsomorphicGit> {
  return (loading ??= import("isomorphic-git"));
}
