// Pick one device by name: a search box narrowing a select of the matching devices (the
// create dialog's device override, the preview).
import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { q } from "../api/query";
import { useDebounced } from "../ui/useDebounced";

export function DevicePicker({ id, label, value, onChange, error }: { id: string; label: string; value: string; onChange: (deviceId: string) => void; error?: string }) {
  const [search, setSearch] = useState("");
  const settled = useDebounced(search.trim(), 250);
  const devices = useQuery(q.devices.list.options({ limit: 50, offset: 0, sort: "name", order: "asc", search: settled || undefined }));
  return (
    <div className="row config-device-picker">
      <div className="field">
        <label htmlFor={`${id}-search`}>Find a device</label>
        <input id={`${id}-search`} className="input" type="search" value={search} onChange={(e) => setSearch(e.target.value)} placeholder="name" />
      </div>
      <div className="field">
        <label htmlFor={id}>{label}</label>
        <select id={id} className="select" value={value} onChange={(e) => onChange(e.target.value)}
          aria-invalid={error ? true : undefined} aria-describedby={error ? `${id}-error` : undefined}>
          <option value="">{devices.isPending ? "Loading devices…" : `Choose a device (${devices.data?.total ?? 0} match)`}</option>
          {devices.data?.items.map((d) => <option key={d.id} value={d.id}>{d.name}</option>)}
        </select>
        {error && <span className="field__error" id={`${id}-error`}>{error}</span>}
      </div>
    </div>
  );
}
