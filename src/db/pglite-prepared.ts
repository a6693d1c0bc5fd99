// Named prepared statements on PGlite. PGlite's `query` parses, describes and plans every
// statement on every call (an unnamed statement, its plan made at bind): for the heartbeat's
// statement, run by every group commit, planning costs about twice its execution
// (docs/benchmarks.md). Here a statement is parsed once per PGlite instance under a name and
// then only bound and executed, so PostgreSQL plans it once (a generic plan after its first
// runs), as node-postgres does with a named query on a server.
//
// It speaks the wire protocol through PGlite's public `execProtocol` in the same order as
// PGlite's own `query` (bind, describe portal, execute, sync), under the same two locks
// (`_runExclusiveTransaction`: not inside someone's transaction; `_runExclusiveQuery`: one
// protocol exchange at a time), and reads the rows with PGlite's own result parser.
import { parse as pgliteResults, protocol, type PGlite } from "@electric-sql/pglite";

type ProtocolMessages = Awaited<ReturnType<PGlite["execProtocol"]>>["messages"];

/** PGlite's locks (public methods of its base class, not in its declared interface). */
interface Exclusive {
  _runExclusiveTransaction<T>(fn: () => Promise<T>): Promise<T>;
  _runExclusiveQuery<T>(fn: () => Promise<T>): Promise<T>;
}

/** `query(name, sql, params)`: the rows of a statement prepared once under `name` on `pglite`. */
export function preparedQueries(pglite: PGlite) {
  /** statement name -> the types of its parameters, as PostgreSQL inferred them at parse */
  const prepared = new Map<string, number[]>();
  const locks = pglite as unknown as Exclusive;
  return <T>(name: string, sql: string, params: unknown[]): Promise<T[]> =>
    locks._runExclusiveTransaction(() =>
      locks._runExclusiveQuery(async () => {
        const messages: ProtocolMessages = [];
        const send = async (message: Uint8Array, into = messages) => void into.push(...(await pglite.execProtocol(message, { syncToFs: false })).messages);
        try {
          let types = prepared.get(name);
          if (!types) {
            const described: ProtocolMessages = [];
            await send(protocol.serialize.parse({ name, text: sql }), described); // throws when it does not parse: nothing prepared
            await send(protocol.serialize.describe({ type: "S", name }), described);
            types = pgliteResults.parseDescribeStatementResults(described);
            prepared.set(name, types);
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
        await pglite.syncToFs(); // as PGlite's query does after a statement outside a transaction
        return pgliteResults.parseResults(messages, pglite.parsers)[0].rows as T[];
      }),
    );
}
