/**
 * Minimal Reflect metadata polyfill for @peculiar/x509.
 *
 * @peculiar/x509 registers its algorithms through `tsyringe`, which refuses to
 * load unless `Reflect.getMetadata` exists. The usual answer is the
 * `reflect-metadata` package, but it is not a dependency of this project, so
 * this module provides the three functions tsyringe calls (x509 never uses
 * constructor-parameter metadata, so a plain WeakMap store is enough).
 *
 * It only installs itself when nothing else has: if `reflect-metadata` is
 * added to the project later, import it first and this file becomes a no-op.
 * It must be evaluated before `@peculiar/x509`; `provider.ts` guarantees that.
 */

type MetadataMap = Map<unknown, unknown>;

interface ReflectMetadataApi {
  defineMetadata(key: unknown, value: unknown, target: object, property?: PropertyKey): void;
  getOwnMetadata(key: unknown, target: object, property?: PropertyKey): unknown;
  getMetadata(key: unknown, target: object, property?: PropertyKey): unknown;
}

const reflect = Reflect as typeof Reflect & Partial<ReflectMetadataApi>;

if (typeof reflect.getMetadata !== "function") {
  // target -> property ("" for the target itself) -> metadata key -> value
  const store = new WeakMap<object, Map<PropertyKey, MetadataMap>>();

  const ownMap = (target: object, property: PropertyKey = "", create = false): MetadataMap | undefined => {
    let byProperty = store.get(target);
    if (!byProperty) {
      if (!create) return undefined;
      byProperty = new Map();
      store.set(target, byProperty);
    }
    let map = byProperty.get(property);
    if (!map && create) {
      map = new Map();
      byProperty.set(property, map);
    }
    return map;
  };

  const api: ReflectMetadataApi = {
    defineMetadata(key, value, target, property) {
      ownMap(target, property, true)?.set(key, value);
    },
    getOwnMetadata(key, target, property) {
      return ownMap(target, property)?.get(key);
    },
    getMetadata(key, target, property) {
      // Like reflect-metadata: walk the prototype chain.
      for (let t: object | null = target; t; t = Object.getPrototypeOf(t) as object | null) {
        const map = ownMap(t, property);
        if (map?.has(key)) return map.get(key);
      }
      return undefined;
    },
  };
  Object.assign(Reflect, api);
}

export {};
