// Slugs: the URL-friendly, unique identifier of an organization (`/organizations/by-slug/acme`).
import type { DbTx } from "../../db/client.js";

export const SLUG_PATTERN = /^[a-z0-9]+(?:-[a-z0-9]+)*$/;
export const SLUG_MAX = 63;

/** "Ächme Corp. (EU)" -> "achme-corp-eu"; never empty ("org" when nothing is left). */
export function slugify(name: string): string {
  const base = name
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "") // strip the accents NFKD split off
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, SLUG_MAX - 4) // room for a "-NNN" suffix
    .replace(/-+$/g, "");
  return base.length >= 2 ? base : base ? `${base}-org` : "org";
}

/**
 * A free slug derived from the name: the base itself, else base-2, base-3, ... One query
 * reads the taken ones. A concurrent creation that wins the race still ends in the unique
 * index (409), never in a duplicate.
 */
export async function deriveFreeSlug(db: DbTx, name: string): Promise<string> {
  const base = slugify(name);
  const taken = new Set(
    (await db.organization.findMany({ where: { slug: { startsWith: base } }, select: { slug: true } })).map((o) => o.slug),
  );
  if (!taken.has(base)) return base;
  for (let n = 2; ; n++) {
    const candidate = `${base}-${n}`;
    if (!taken.has(candidate)) return candidate;
  }
}
