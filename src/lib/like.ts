// Searching text with LIKE: a search for "50%" or "a_b" finds that text, not every row.
// Prisma's `contains` becomes LIKE/ILIKE with the operand passed on as a pattern, wildcards
// live (prisma/prisma#19506), so every search escapes them here first.

/** The text with LIKE's wildcards (and its escape character) escaped. */
export function escapeLike(text: string): string {
  return text.replace(/[\\%_]/g, (c) => `\\${c}`);
}

/** A LIKE pattern matching any value that contains `text`, literally (for raw SQL). */
export function likePattern(text: string): string {
  return `%${escapeLike(text)}%`;
}

/** Prisma's filter for a value containing `text` literally, ignoring case. */
export function containsText(text: string): { contains: string; mode: "insensitive" } {
  return { contains: escapeLike(text), mode: "insensitive" };
}
