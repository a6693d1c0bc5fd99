// Where a device fetches an oci:// system image's bundle from the service (system-bundle-route.ts).
// Apart from the route so that the desired state (deployments/agent-state.ts) names it without
// importing the route's HTTP plumbing.

/** The path the desired state hands a device for an oci:// system image. */
export function systemBundlePath(deploymentId: string, component: string): string {
  return `/api/v1/agent/deployments/${deploymentId}/components/${component}/bundle`;
}
