// A label selector as people type it (`site=berlin,tier=edge`), checked by the API's own rules
// (src/modules/devices/selector.ts) as they type, with the fleet's label keys, and then the
// values of the key being typed, offered as suggestions.
import { useId, useMemo } from "react";
import { useQuery } from "@tanstack/react-query";
import { parseSelector, SelectorError } from "../../../src/modules/devices/selector";
import { q } from "../api/query";
import { useDebounced } from "../ui/useDebounced";
import { counted } from "../../../src/lib/plural";

/** The selector's problem, or null when the API would accept it. */
export function selectorProblem(text: string): string | null {
  try {
    parseSelector(text);
    return null;
  } catch (err) {
    if (err instanceof SelectorError) return err.message;
    throw err;
  }
}

/**
 * A selector still being typed: a term with a key and `=` but no value yet (`site=`, what
 * picking a key from the suggestions leaves). It parses (an empty value is a value), but a filter
 * applied now would show no devices while the person is about to type the value.
 */
export function selectorUnfinished(text: string): boolean {
  return text.split(",").some((term) => /^[^=]+=\s*$/.test(term.trim()));
}

export function SelectorInput({ id, label = "Label selector", value, onChange, placeholder = "site=berlin,tier=edge" }: {
  id?: string;
  label?: string;
  value: string;
  onChange: (value: string) => void;
  placeholder?: string;
}) {
  const generatedId = useId();
  const inputId = id ?? generatedId;
  const listId = `${inputId}-suggestions`;
  const problem = selectorProblem(value);

  // The term being typed: the text after the last comma.
  const head = value.includes(",") ? value.slice(0, value.lastIndexOf(",") + 1) : "";
  const term = value.slice(head.length).trimStart();
  const eq = term.indexOf("=");
  const typingKey = eq < 0 ? term : term.slice(0, eq).trim();
  const debouncedKey = useDebounced(eq >= 0 ? typingKey : "", 200);

  const keys = useQuery({ ...q.groups.labelKeys.options({ limit: 200, offset: 0 }), staleTime: 60_000 });
  const values = useQuery({
    ...q.groups.labelValues.options({ key: debouncedKey, limit: 50, offset: 0 }),
    enabled: debouncedKey.length > 0,
    staleTime: 60_000,
  });

  const suggestions = useMemo(() => {
    if (eq < 0) {
      return (keys.data?.items ?? [])
        .filter((k) => k.key.toLowerCase().startsWith(typingKey.toLowerCase()))
        .slice(0, 20)
        .map((k) => ({ value: `${head}${k.key}=`, label: `${k.key} (${counted(k.deviceCount, "device")})` }));
    }
    const typedValue = term.slice(eq + 1);
    return (values.data?.items ?? [])
      .filter((v) => v.value.toLowerCase().startsWith(typedValue.toLowerCase()))
      .slice(0, 20)
      .map((v) => ({ value: `${head}${typingKey}=${v.value}`, label: counted(v.count, "device") }));
  }, [eq, keys.data, values.data, typingKey, term, head]);

  return (
    <div className="field selector-field">
      <label htmlFor={inputId}>{label}</label>
      <input
        id={inputId}
        className="input mono"
        list={listId}
        value={value}
        placeholder={placeholder}
        spellCheck={false}
        autoComplete="off"
        aria-invalid={problem ? true : undefined}
        aria-describedby={problem ? `${inputId}-problem` : undefined}
        onChange={(e) => onChange(e.target.value)}
      />
      <datalist id={listId}>
        {suggestions.map((s) => (
          <option key={s.value} value={s.value}>{s.label}</option>
        ))}
      </datalist>
      {problem && <span id={`${inputId}-problem`} className="field__error">{problem}</span>}
    </div>
  );
}
