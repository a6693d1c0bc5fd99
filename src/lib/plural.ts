// Counted nouns, said once for the service's messages and the console alike ("1 account",
// "2 accounts"): English plural rules from Intl.PluralRules, irregular plurals given by the caller.
const rules = new Intl.PluralRules("en");

/** The noun for `n` things: plural(1, "device") is "device", plural(2, "device") "devices". */
export function plural(n: number, one: string, other = `${one}s`): string {
  return rules.select(n) === "one" ? one : other;
}

/** `n` and its noun: counted(1, "account") is "1 account", counted(3, "entry", "entries") "3 entries". */
export function counted(n: number, one: string, other?: string): string {
  return `${n.toLocaleString("en")} ${plural(n, one, other)}`;
}
