// Shell completion that never goes stale: the scripts `fleet completion bash|zsh|fish` prints
// ask `fleet __complete -- WORDS...` for the candidates, which walks the same command tree the
// CLI runs (generated from the operation manifest): groups, commands, flags, and the values of
// an enum flag (--status online|offline|...).
import type { Command, Option } from "commander";
import { COMPLETIONS } from "./generated.js";
import { loadManifest } from "./load-manifest.js";
import { buildProgram, type Io } from "./main.js";
import type { Globals } from "./runtime.js";

const SCRIPTS: Record<string, string> = {
  bash: `# fleet completion for bash: source <(fleet completion bash)
_fleet_complete() {
  local IFS=$'\\n'
  COMPREPLY=( $(fleet __complete -- "\${COMP_WORDS[@]:1:COMP_CWORD}" 2>/dev/null) )
}
complete -o default -F _fleet_complete fleet
`,
  zsh: `#compdef fleet
# fleet completion for zsh: source <(fleet completion zsh)
_fleet_complete() {
  local -a candidates
  candidates=("\${(@f)$(fleet __complete -- "\${(@)words[2,CURRENT]}" 2>/dev/null)}")
  compadd -- \${candidates}
}
compdef _fleet_complete fleet
`,
  fish: `# fleet completion for fish: fleet completion fish | source
complete -c fleet -f -a '(fleet __complete -- (commandline -opc)[2..-1] (commandline -ct) 2>/dev/null)'
`,
};

export async function completionScript(args: unknown[], _globals: Globals, io: Io): Promise<void> {
  io.stdout.write(SCRIPTS[String(args[0])]);
}

const takesValue = (o: Option) => o.required || o.optional;

/** The candidates for the last word of `words` (the word being typed, maybe empty). */
export function candidates(program: Command, words: string[]): string[] {
  const current = words[words.length - 1] ?? "";
  let cmd = program;
  const options = () => [...cmd.options, ...(cmd === program ? [] : program.options)].filter((o) => !o.hidden);
  let pending: Option | null = null;
  for (const word of words.slice(0, -1)) {
    if (pending) {
      pending = null;
      continue;
    }
    if (word.startsWith("-")) {
      const option = options().find((o) => o.long === word || o.short === word);
      if (option && takesValue(option) && !word.includes("=")) pending = option;
      continue;
    }
    const sub = cmd.commands.find((c) => c.name() === word || c.aliases().includes(word));
    if (sub) cmd = sub;
  }
  let found: string[];
  if (pending) found = pending.argChoices ?? COMPLETIONS.get(pending) ?? [];
  else if (current.startsWith("-")) found = options().flatMap((o) => [o.long, o.short]).filter((f): f is string => Boolean(f));
  else found = cmd.commands.filter((c) => !(c as unknown as { _hidden?: boolean })._hidden).map((c) => c.name());
  return found.filter((c) => c.startsWith(current)).sort();
}

export async function complete(args: unknown[], _globals: Globals, io: Io): Promise<void> {
  const words = (args[0] as string[] | undefined) ?? [];
  const program = buildProgram(loadManifest(io.env), io, null);
  const list = candidates(program, words.length ? words : [""]);
  io.stdout.write(list.map((c) => `${c}\n`).join(""));
}
