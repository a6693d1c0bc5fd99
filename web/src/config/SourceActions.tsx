// A config source's actions, the same in the list and on its page: sync now (plan first,
// SyncDialog), allow the prune guard once, and delete (its resources stay, unowned).
import { useState } from "react";
import { RefreshCw, ShieldOff, Trash2 } from "lucide-react";
import { q } from "../api/query";
import { useCan, useSession } from "../app/session";
import { Button } from "../ui/Button";
import { ConfirmDialog } from "../ui/Dialog";
import { useAction } from "../ui/useAction";
import { KIND_KEYS, SyncDialog } from "./SyncDialog";
import type { ConfigSource } from "./source-form";

/** A source applies every kind: reading one takes the read permission of all six, changing one their write. */
export function useConfigAccess() {
  const read = [useCan("deployments:read"), useCan("alerts:read"), useCan("roles:read"), useCan("registries:read")];
  const write = [useCan("deployments:write"), useCan("alerts:write"), useCan("roles:write"), useCan("registries:write")];
  return { canRead: read.every(Boolean), canWrite: write.every(Boolean) };
}

export function SourceActions({ source, onDeleted, size = "small" }: { source: ConfigSource; onDeleted?: () => void; size?: "small" | "normal" }) {
  const session = useSession();
  const input = { orgId: session.organization.id, id: source.id };
  const [syncing, setSyncing] = useState(false);
  const [deleting, setDeleting] = useState(false);
  const allow = useAction({ mutationFn: () => q.config.sourcesAllowPrune.call(input) }, {
    invalidates: [q.config.key()],
    success: `The next sync of ${source.name} may prune past its guard, once`,
    failure: `Could not allow pruning for ${source.name}`,
  });
  const remove = useAction({ mutationFn: () => q.config.sourcesDelete.call(input) }, {
    // the list, not the source's own reads: they would answer 404 before its page is left
    invalidates: [q.config.sourcesList.key(), ...KIND_KEYS],
    success: (r) => `Config source “${source.name}” deleted; ${r.released} resource${r.released === 1 ? "" : "s"} released`,
    onSuccess: () => onDeleted?.(),
  });
  return (
    <div className="row row--nowrap">
      <Button size={size} variant="primary" icon={<RefreshCw />} onClick={() => setSyncing(true)}>Sync now<span className="visually-hidden"> {source.name}</span></Button>
      {source.prune && (
        <Button size={size} icon={<ShieldOff />} busy={allow.isPending} disabled={source.pruneAllowedOnce} title={source.pruneAllowedOnce ? "Allowed: the next sync spends it" : undefined} onClick={() => void allow.run()}>
          {source.pruneAllowedOnce ? "Prune allowed once" : "Allow prune once"}<span className="visually-hidden"> for {source.name}</span>
        </Button>
      )}
      <Button size={size} variant="danger" icon={<Trash2 />} onClick={() => setDeleting(true)} aria-label={`Delete ${source.name}`}>{size === "normal" ? "Delete" : undefined}</Button>
      {syncing && <SyncDialog key={source.id} source={source} onClose={() => setSyncing(false)} />}
      <ConfirmDialog open={deleting} onClose={() => setDeleting(false)} title={`Delete the config source “${source.name}”?`} confirmLabel="Delete source" action={remove}>
        <p>Its Git repository is no longer synced. The resources it applied stay, unowned: they can be changed through the console and the API again.</p>
      </ConfirmDialog>
    </div>
  );
}
