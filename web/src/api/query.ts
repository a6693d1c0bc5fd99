// TanStack Query over the typed client, through one small proxy: `q.devices.list.options(input)`
// gives the query options of that procedure (key, fetcher with cancellation), typed from the
// router; `q.devices.update.mutation()` the mutation options; `q.devices.key()` the key prefix of
// everything under devices, for invalidation. The official @trpc/tanstack-react-query is not
// available here in a version matching our @trpc/server, and this is all of it we need.
import type { QueryKey } from "@tanstack/react-query";
import { api } from "./client";

type AnyQueryProcedure = { query: (input: any, opts?: { signal?: AbortSignal }) => Promise<any> };
type AnyMutationProcedure = { mutate: (input: any, opts?: any) => Promise<any> };

type QueryNode<P extends AnyQueryProcedure> = {
  /** Query options: key = [...path, input], fetcher = the procedure (aborted when no longer needed). */
  options(...input: undefined extends Parameters<P["query"]>[0] ? [input?: Parameters<P["query"]>[0]] : [input: Parameters<P["query"]>[0]]): {
    queryKey: QueryKey;
    queryFn: (context: { signal: AbortSignal }) => ReturnType<P["query"]>;
  };
  /** [...path] or [...path, input]: for invalidation and cache reads. */
  key(input?: Parameters<P["query"]>[0]): QueryKey;
  /** Calls the procedure directly (no cache). */
  fetch: P["query"];
};

type MutationNode<P extends AnyMutationProcedure> = {
  mutation(): {
    mutationKey: QueryKey;
    mutationFn: (input: Parameters<P["mutate"]>[0]) => ReturnType<P["mutate"]>;
  };
  key(): QueryKey;
  call: P["mutate"];
};

type Decorated<T> = {
  [K in keyof T]: T[K] extends AnyQueryProcedure ? QueryNode<T[K]> : T[K] extends AnyMutationProcedure ? MutationNode<T[K]> : Decorated<T[K]>;
} & { key(): QueryKey };

function procedureAt(path: string[]): any {
  let node: any = api;
  for (const part of path) node = node[part];
  return node;
}

function decorate(path: string[]): any {
  const node: Record<string, unknown> = {
    key: (input?: unknown) => (input === undefined ? [...path] : [...path, input]),
    options: (input?: unknown) => ({
      queryKey: [...path, input ?? null],
      queryFn: ({ signal }: { signal: AbortSignal }) => procedureAt(path).query(input, { signal }),
    }),
    fetch: (input?: unknown, opts?: unknown) => procedureAt(path).query(input, opts),
    mutation: () => ({ mutationKey: [...path], mutationFn: (input: unknown) => procedureAt(path).mutate(input) }),
    call: (input?: unknown, opts?: unknown) => procedureAt(path).mutate(input, opts),
  };
  return new Proxy(node, {
    get: (target, prop) => (typeof prop === "string" && prop in target ? target[prop] : typeof prop === "string" ? decorate([...path, prop]) : undefined),
  });
}

export const q = decorate([]) as Decorated<typeof api>;
