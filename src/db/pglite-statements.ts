// Statements on PGlite run by our own extended-protocol exchange, for two reasons measured on
// the embedded default (docs/benchmarks.md):
//
// * Named prepared statements. PGlite's `query` parses, describes and plans every statement
//   on every call (an unnamed statement, its plan made at bind): for the heartbeat's statement,
//   run by every group commit, planning costs about twice its execution. `preparedQueries`
//   parses a statement once per PGlite instance under a name and then only binds and executes,
//   so PostgreSQL plans it once (a generic plan after its first runs), as node-postgres does
//   with a named query on a server.
// * Prisma's queries without a copy of every parser. The Prisma adapter (pglite-prisma-adapter)
//   passes its own parsers with every query, and PGlite's result parser then copies its table
//   of 318 type parsers with them (`{ ...parsers, ...options.parsers }`, ~12 KB) for every
//   statement: 30 % of everything the service allocated with 100 devices heartbeating.
//   `prismaPGlite` gives the adapter a PGlite whose `query` runs the same exchange and parses
//   with the two tables merged once.
//
// The exchange is the one of PGlite's own `query` (parse, describe statement, bind, describe
// portal, execute, sync), through PGlite's public `execProtocolStream`, under the same two
// locks (`_runExclusiveTransaction`: not inside someone's transaction; `_runExclusiveQuery`:
// one protocol exchange at a time), each parameter through PGlite's serializer for its type,
// the rows read with PGlite's own result parser.
import { parse as pgliteResults, protocol, type PGlite, type QueryOptions, type Results, type Transaction } from "@electric-sql/pglite";

type ProtocolMessages = Awaited<ReturnType<PGlite["execProtocolStream"]>>;
type Parsers = Parameters<typeof pgliteResults.parseResults>[1];

/** PGlite's locks (public methods of its base class, not in its declared interface). */
interface Exclusive {
  /** throws when PGlite is closing or closed, as its `query` does first */
  _checkReady(): Promise<void>;
  _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T>;
  _runExclusiveQuery<T>(fn: () => Promise<T>): Promise<T>;
}

/**
 * One statement's exchange, its messages: parse (once per name for a named statement), bind,
 * describe portal, execute, sync. The caller holds PGlite's query lock.
 */
function statementExchange(pglite: PGlite) {
  /** statement name -> the types of its parameters, as PostgreSQL inferred them at parse */
  const prepared = new Map<string, number[]>();
  return async (name: string, sql: string, params: readonly unknown[]): Promise<ProtocolMessages> => {
    const messages: ProtocolMessages = [];
    const send = async (message: Uint8Array, into = messages) => void into.push(...(await pglite.execProtocolStream(message, { syncToFs: false })));
    try {
      let types = name ? prepared.get(name) : undefined;
      if (!types) {
        const described: ProtocolMessages = [];
        await send(protocol.serialize.parse({ name, text: sql }), described); // throws when it does not parse: nothing prepared
        await send(protocol.serialize.describe({ type: "S", name }), described);
        types = pgliteResults.parseDescribeStatementResults(described);
        if (name) prepared.set(name, types);
      }
      // each parameter as PGlite's query sends it: its type's serializer, else its text
      const values = params.map((value, i) => {
        if (value === null || value === undefined) return null;
        const serialize = pglite.serializers[types[i]];
        return serialize ? serialize(value) : String(value);
      });
      await send(protocol.serialize.bind({ statement: name, values }));
      await send(protocol.serialize.describe({ type: "P" }));
      await send(protocol.serialize.execute({}));
    } finally {
      await send(protocol.serialize.sync());
    }
    return messages;
  };
}

/** `query(name, sql, params)`: the rows of a statement prepared once under `name` on `pglite`. */
export function preparedQueries(pglite: PGlite) {
  const exchange = statementExchange(pglite);
  const locks = pglite as unknown as Exclusive;
  return <T>(name: string, sql: string, params: unknown[]): Promise<T[]> =>
    locks._runExclusiveTransaction(() =>
      locks._runExclusiveQuery(async () => {
        const messages = await exchange(name, sql, params);
        await pglite.syncToFs(); // as PGlite's query does after a statement outside a transaction
        return pgliteResults.parseResults(messages, pglite.parsers)[0].rows as T[];
      }),
    );
}

/** What the Prisma adapter uses of a PGlite: `query`, `exec`, `transaction` (with the transaction's `query`, `exec`, `rollback`). */
export type PrismaFacingPGlite = Pick<PGlite, "query" | "exec" | "transaction">;

/**
 * The PGlite the Prisma adapter is given: `query` and a transaction's `query` answer what
 * PGlite's would, with the caller's parsers merged into PGlite's once per parser table instead
 * of once per statement. Everything else is PGlite's own.
 */
export function prismaPGlite(pglite: PGlite): PrismaFacingPGlite {
  const exchange = statementExchange(pglite);
  const locks = pglite as unknown as Exclusive;
  const merged = new WeakMap<Parsers, Parsers>();
  const parsersFor = (extra: QueryOptions["parsers"]): Parsers => {
    if (!extra) return pglite.parsers;
    let table = merged.get(extra as Parsers);
    if (!table) merged.set(extra as Parsers, (table = { ...pglite.parsers, ...extra }));
    return table;
  };
  const run = async <T>(sql: string, params: readonly unknown[] | undefined, options: QueryOptions | undefined, inTransaction: boolean) => {
    if (options?.blob || options?.paramTypes || options?.serializers) throw new Error("prismaPGlite: blob, paramTypes and serializers are not supported");
    const messages = await exchange("", sql, params ?? []);
    if (!inTransaction) await pglite.syncToFs();
    const { parsers, ...rest } = options ?? {};
    return pgliteResults.parseResults(messages, parsersFor(parsers), rest)[0] as Results<T>;
  };
  return {
    query: async <T>(sql: string, params?: unknown[], options?: QueryOptions) => {
      await locks._checkReady();
      return locks._runExclusiveTransaction(() => locks._runExclusiveQuery(() => run<T>(sql, params, options, false)));
    },
    exec: (sql, options) => pglite.exec(sql, options),
    transaction: <T>(work: (tx: Transaction) => Promise<T>) =>
      pglite.transaction((tx) =>
        work({
          ...tx,
          query: async <R>(sql: string, params?: unknown[], options?: QueryOptions) => {
            if (tx.closed) throw new Error("Transaction is closed");
            return locks._runExclusiveQuery(() => run<R>(sql, params, options, true));
          },
          exec: (sql, options) => tx.exec(sql, options),
          rollback: () => tx.rollback(),
          get closed() {
            return tx.closed;
          },
        }),
      ),
  };
}
