// State that lives as long as one running service: caches, writers, buses, open streams.
// It sits beside the Services object, keyed by it, rather than in it, so that each domain
// owns its state's type and creation (services.ts imports no domain) and nothing is built
// before its first use. Never a module-level singleton: tests run several services side by
// side in one process.

export interface PerService<S extends object, T> {
  /** The value of `owner`, created on first use. */
  (owner: S): T;
  /** Replaces the value of `owner` (tests plug in another mailer, for example). */
  set(owner: S, value: T): void;
  /** The value of `owner` if it was ever created, without creating it. */
  peek(owner: object): T | undefined;
}

export function perService<S extends object, T>(create: (owner: S) => T): PerService<S, T> {
  const values = new WeakMap<object, T>();
  const of = (owner: S): T => {
    let value = values.get(owner);
    if (value === undefined) {
      value = create(owner);
      values.set(owner, value);
    }
    return value;
  };
  return Object.assign(of, {
    set: (owner: S, value: T) => void values.set(owner, value),
    peek: (owner: object) => values.get(owner),
  });
}
