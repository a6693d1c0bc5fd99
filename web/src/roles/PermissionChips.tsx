/** A permission list as chips, the first few then "+N more" (all of them in the title). */
export function PermissionChips({ permissions, max = 4 }: { permissions: readonly string[]; max?: number }) {
  if (permissions.length === 0) return <span className="faint">none</span>;
  const shown = permissions.slice(0, max);
  return (
    <span className="permission-list" title={permissions.join(", ")}>
      {shown.map((p) => <span key={p} className="chip">{p}</span>)}
      {permissions.length > max && <span className="faint">+{permissions.length - max} more</span>}
    </span>
  );
}
