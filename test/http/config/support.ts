// Shared by the fleet-as-code tests: the deployment tests' parameter declarations, with the
// secret one optional (a document never holds a secret, so a required one could never be
// created from documents alone).
import { DEFAULT_PARAMETERS_YAML } from "../deployments/support.js";

export const PARAMETERS_YAML = DEFAULT_PARAMETERS_YAML.replace("    required: true\n", "");

/** A Deployment document of the deployment tests' application (profile compose-main); `spec` lines are YAML under spec:, indented. */
export function deploymentDocument(name: string, applicationId: string, version: string, spec: string[]): string {
  return `apiVersion: fleet.app/v1
kind: Deployment
metadata: { name: ${name} }
spec:
  applicationId: ${applicationId}
  version: "${version}"
  profileId: compose-main
${spec.map((line) => `  ${line}\n`).join("")}`;
}
