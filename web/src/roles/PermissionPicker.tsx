// The one permission picker (custom roles and API keys): the catalogue as the API lists it
// (GET /roles/permissions, never a copy in the console), grouped by resource. It offers only
// what `offered` allows (what the person creating holds: the API refuses anything more, with
// 403). A permission already chosen but not offered stays visible, checked and locked, so that
// editing never drops it silently.
import { useQuery } from "@tanstack/react-query";
import type { RouterOutputs } from "../api/client";
import { q } from "../api/query";
import { ErrorBox, Loading } from "../ui/states";
import "./roles.css";

export type CataloguePermission = RouterOutputs["roles"]["permissions"]["items"][number];

export const permissionCatalogueQuery = () => ({ ...q.roles.permissions.options(), staleTime: Infinity });

/**
 * A stored list as catalogue keys: `*` means every permission an organization can give (never
 * platform:admin, which is only ever named), `devices:*` every devices permission.
 */
export function expandPermissions(entries: readonly string[], catalogue: readonly CataloguePermission[]): Set<string> {
  const keys = new Set<string>();
  for (const entry of entries) {
    for (const p of catalogue) {
      const byWildcard = p.key !== "platform:admin" && (entry === "*" || entry === `${p.resource}:*`);
      if (entry === p.key || byWildcard) keys.add(p.key);
    }
  }
  return keys;
}

/** The catalogue's resources in its own order, each with its permissions. */
export function groupByResource(catalogue: readonly CataloguePermission[]): [string, CataloguePermission[]][] {
  const groups = new Map<string, CataloguePermission[]>();
  for (const p of catalogue) groups.set(p.resource, [...(groups.get(p.resource) ?? []), p]);
  return [...groups];
}

export function PermissionPicker({ legend, value, onChange, offered, idPrefix }: {
  legend: string;
  /** chosen catalogue keys */
  value: ReadonlySet<string>;
  onChange: (next: Set<string>) => void;
  /** whether the person may hand this permission out */
  offered: (key: string) => boolean;
  idPrefix: string;
}) {
  const catalogue = useQuery(permissionCatalogueQuery());
  if (catalogue.isError) return <ErrorBox error={catalogue.error} />;
  if (!catalogue.data) return <Loading label="Loading permissions" />;
  const groups = groupByResource(catalogue.data.items)
    .map(([resource, permissions]) => [resource, permissions.filter((p) => offered(p.key) || value.has(p.key))] as const)
    .filter(([, permissions]) => permissions.length > 0);

  function toggle(key: string) {
    const next = new Set(value);
    if (next.has(key)) next.delete(key);
    else next.add(key);
    onChange(next);
  }

  return (
    <fieldset className="permission-picker">
      <legend className="field__label">{legend} <span className="faint">({value.size} chosen)</span></legend>
      <div className="permission-picker__groups">
        {groups.map(([resource, permissions]) => (
          <fieldset key={resource} className="permission-group">
            <legend>{resource}</legend>
            {permissions.map((p) => {
              const id = `${idPrefix}-${p.key}`;
              const locked = !offered(p.key);
              return (
                <div key={p.key} className="permission-option">
                  <input id={id} type="checkbox" checked={value.has(p.key)} disabled={locked} onChange={() => toggle(p.key)} aria-describedby={`${id}-description`} />
                  <label htmlFor={id}><code>{p.key}</code></label>
                  <span id={`${id}-description`} className="faint permission-option__description">
                    {p.description}{locked ? " (you do not hold it: kept as it is)" : ""}
                  </span>
                </div>
              );
            })}
          </fieldset>
        ))}
      </div>
    </fieldset>
  );
}
