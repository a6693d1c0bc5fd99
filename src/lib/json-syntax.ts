// Where a JSON text breaks, for the 400 that answers a malformed body: "Malformed JSON at line 3,
// column 7: unexpected '}'". JSON.parse says where only for some errors ("... at position 9")
// and quotes the text itself for others, so the place is found by parsing prefixes: a prefix
// that only ends too early could still become valid JSON, and the longest such prefix ends
// right before the first character that cannot.

/** Whether `prefix` parses, or fails only because it ends (so some continuation would parse). */
function viablePrefix(prefix: string): boolean {
  try {
    JSON.parse(prefix);
    return true;
  } catch (err) {
    const message = (err as Error).message;
    if (/Unexpected end of JSON input/.test(message)) return true;
    const at = /at position (\d+)/.exec(message);
    return at !== null && Number(at[1]) >= prefix.length;
  }
}

/** The offset of the first character at which `text` (not valid JSON) cannot go on; text.length when it only ends too early. */
export function jsonErrorOffset(text: string): number {
  if (viablePrefix(text)) return text.length;
  let good = 0; // a viable prefix length (the empty text is one)
  let bad = text.length; // a length known not to be viable
  while (bad - good > 1) {
    const middle = Math.floor((good + bad) / 2);
    if (viablePrefix(text.slice(0, middle))) good = middle;
    else bad = middle;
  }
  return good;
}

/** The sentence for a malformed JSON text: where it breaks (line and column from 1) and on what. */
export function jsonSyntaxMessage(text: string): string {
  const offset = jsonErrorOffset(text);
  const before = text.slice(0, offset).split("\n");
  const where = `line ${before.length}, column ${before[before.length - 1].length + 1}`;
  const found = offset >= text.length ? "the text ends too early" : `unexpected ${JSON.stringify(text[offset])}`;
  return `Malformed JSON at ${where} (offset ${offset}): ${found}`;
}
