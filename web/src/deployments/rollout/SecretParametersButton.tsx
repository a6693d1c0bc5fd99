// The secret parameters of a deployment managed as code (docs/config-as-code.md, "Secrets"): its
// documents never hold them, so a required one leaves the deployment a draft "pending secret"
// that cannot start. Set here through POST /deployments/{id}/secret-parameters, the one change
// open for a managed deployment. Offered when the version declares secret parameters.
import { useState } from "react";
import { useQuery } from "@tanstack/react-query";
import { KeyRound } from "lucide-react";
import type { RouterOutputs } from "../../api/client";
import { q } from "../../api/query";
import { useCan } from "../../app/session";
import { Button } from "../../ui/Button";
import { SecretsDialog } from "../../ui/SecretsDialog";

type Deployment = RouterOutputs["deployments"]["get"];
interface Declared {
  secret?: boolean;
  required?: boolean;
  value?: unknown;
  description?: string;
}

export function SecretParametersButton({ deployment }: { deployment: Deployment }) {
  const [open, setOpen] = useState(false);
  const canRead = useCan("applications:read");
  const versions = useQuery({ ...q.applications.versions.options({ id: deployment.applicationId, limit: 100, offset: 0 }), enabled: canRead });
  const declared = (versions.data?.items.find((v) => v.version === deployment.version)?.parameters ?? {}) as Record<string, Declared>;
  const secret = Object.entries(declared).filter(([, p]) => p.secret);
  if (!secret.length) return null;
  const pending = secret.filter(([name, p]) => p.required && (p.value === undefined || p.value === null) && !deployment.secretParameterNames.includes(name)).map(([n]) => n);
  return (
    <>
      <Button icon={<KeyRound />} onClick={() => setOpen(true)}>Set secret parameters</Button>
      {pending.length > 0 && <span className="faint" data-testid="pending-secrets">Pending secret: {pending.join(", ")} (it cannot start without)</span>}
      {open && (
        <SecretsDialog
          title={`Secret parameters of ${deployment.name}`}
          fields={secret.map(([name, p]) => ({
            key: name,
            label: name,
            password: true,
            hint: `${deployment.secretParameterNames.includes(name) ? "set; empty keeps it" : p.required ? "required, not set yet" : "not set"}${p.description ? ` · ${p.description}` : ""}`,
          }))}
          save={(values) => q.deployments.secretParameters.call({ id: deployment.id, parameters: values })}
          invalidates={[q.deployments.key()]}
          success={`Secret parameters of ${deployment.name} saved`}
          onClose={() => setOpen(false)}
        />
      )}
    </>
  );
}
