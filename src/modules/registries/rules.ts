// What every registry service (Git, OCI, global OCI) does alike: the name check, the lookup,
// a list page, and the URL and credential rules of an update. Each service passes its own
// table in through small functions, so that its queries (and their tenant scope) stay in view.
import type { SecretBox } from "../../lib/crypto.js";
import { pageOf } from "../../lib/paging.js";
import { badRequest, conflict, notFound } from "../../trpc/errors.js";
import type { RegistryAuthType } from "./fields.js";
import { assertCredentialFits, sealCredential } from "./git/credentials.js";
import { assertUrlNotForbidden } from "./url.js";

/** The filter of a name check; on a rename the registry itself is no clash. */
export interface NameClashWhere { name: string; NOT?: { id: string } }

/**
 * Names are unique (in an organization, or on the platform for global registries). Checked
 * first for a clear answer; the unique index still decides between two concurrent requests.
 * `named` starts the 409's message, e.g. `A Git registry`.
 */
export async function assertRegistryNameFree(
  named: string,
  name: string,
  exceptId: string | undefined,
  findClash: (where: NameClashWhere) => Promise<{ id: string } | null>,
) {
  const clash = await findClash({ name, ...(exceptId ? { NOT: { id: exceptId } } : {}) });
  if (clash) throw conflict(`${named} named "${name}" already exists`);
}

/** The row, or a 404 naming what was looked for (another tenant's registry is not found either). */
export async function foundOr404<T>(lookup: Promise<T | null>, what: string): Promise<T> {
  const row = await lookup;
  if (!row) throw notFound(what);
  return row;
}

/** Newest first; the id breaks ties so that pages neither overlap nor skip rows. */
export const NEWEST_FIRST: [{ createdAt: "desc" }, { id: "asc" }] = [{ createdAt: "desc" }, { id: "asc" }];

/** The optional `enabled` filter of a list: absent lists every registry. */
export const enabledFilter = (enabled: boolean | undefined) => (enabled === undefined ? {} : { enabled });

/** One page of a list and the total under the same filter, read together. */
export async function listPage<T>(
  paging: { limit: number; offset: number },
  findPage: (page: { skip: number; take: number }) => Promise<T[]>,
  count: () => Promise<number>,
) {
  const [items, total] = await Promise.all([findPage({ skip: paging.offset, take: paging.limit }), count()]);
  return pageOf(items, total, paging.offset);
}

/** The columns of a registry that say where it is and how to sign in. */
export interface ConnectionColumns { url?: string; authType: RegistryAuthType; credentialSealed?: string | null }

/**
 * The URL, auth type and credential of an update, checked together because a credential is
 * given for one server (400 when they do not fit). Returns the columns to write, and whether
 * the URL changed so that the caller can reset what it knew about the old server.
 */
export function connectionChanges(
  secrets: SecretBox,
  current: { url: string; authType: string; credentialSealed: string | null },
  input: { url?: string; authType?: RegistryAuthType; credential?: string },
): { urlChanged: boolean; columns: ConnectionColumns } {
  // The column only holds values that the input's enum admitted.
  const authType = input.authType ?? (current.authType as RegistryAuthType);
  const columns: ConnectionColumns = { authType };
  const newUrl = input.url !== undefined && input.url !== current.url ? input.url : undefined;
  if (newUrl !== undefined) {
    assertUrlNotForbidden(newUrl);
    // The stored credential was given for one server: pointing it at another one needs the
    // credential again, or anyone allowed to edit the URL could collect it.
    if (authType !== "NONE" && input.credential === undefined && new URL(newUrl).origin !== new URL(current.url).origin) {
      throw badRequest("Invalid input: credential: send the credential again when the URL points to another server");
    }
    columns.url = newUrl;
  }
  if (authType === "NONE") {
    assertCredentialFits("NONE", input.credential);
    columns.credentialSealed = null;
  } else if (input.credential !== undefined) {
    assertCredentialFits(authType, input.credential);
    columns.credentialSealed = sealCredential(secrets, input.credential);
  } else if (authType !== current.authType || current.credentialSealed === null) {
    // A stored BASIC pair is no TOKEN (and the other way round): the type change needs its credential.
    assertCredentialFits(authType, undefined);
  }
  return { urlChanged: newUrl !== undefined, columns };
}
