// Registries: the organization's Git and OCI registries (create, edit, enable/disable, delete,
// sync now with what the sync did; OCI also health check and sync history) and, for Super
// Admins, the platform's global OCI registries (priority, mandatory). One RegistrySection per
// kind; what differs between kinds is in kinds.tsx.
import { useCan, useSession } from "../app/session";
import { Card, PageHeader } from "../ui/Card";
import { Forbidden } from "../ui/states";
import { GIT, GLOBAL, OCI } from "./kinds";
import { RegistrySection } from "./RegistrySection";
import "../applications/applications.css";
import "./registries.css";

export function RegistriesPage() {
  const canRead = useCan("registries:read");
  const canWrite = useCan("registries:write");
  const session = useSession();
  return (
    <>
      <PageHeader title="Registries" description="Where the catalog's applications come from: Git repositories of manifests and OCI registries of application packages, synced on a schedule or now." />
      {canRead ? (
        <div className="stack">
          <RegistrySection spec={GIT} canWrite={canWrite} />
          <RegistrySection spec={OCI} canWrite={canWrite} />
          {session.isSuperAdmin && <RegistrySection spec={GLOBAL} canWrite />}
        </div>
      ) : <Card><Forbidden what="the registries" /></Card>}
    </>
  );
}
