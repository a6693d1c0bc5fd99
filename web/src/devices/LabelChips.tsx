/** A device's labels as key=value chips; beyond `max`, a count of the rest (all in the tooltip). */
export function LabelChips({ labels, max = Infinity }: { labels: Record<string, string>; max?: number }) {
  const entries = Object.entries(labels).sort(([a], [b]) => a.localeCompare(b));
  if (entries.length === 0) return <span className="faint">no labels</span>;
  const shown = entries.slice(0, max);
  const rest = entries.length - shown.length;
  return (
    <span className="chips" title={entries.map(([k, v]) => `${k}=${v}`).join("\n")}>
      {shown.map(([k, v]) => (
        <span key={k} className="chip">{k}={v}</span>
      ))}
      {rest > 0 && <span className="chip">+{rest}</span>}
    </span>
  );
}
